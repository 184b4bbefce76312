// SPDX-License-Identifier: MIT
// TEST STAND-INS, never deployed anywhere but a local test chain. Circle publishes no npm package with
// deployable CCTP v2 bytecode, so these two contracts play TokenMessengerV2 and MessageTransmitterV2 on anvil.
// Their external functions and events have the real v2 signatures (circlefin/evm-cctp-contracts,
// src/v2/TokenMessengerV2.sol, src/v2/MessageTransmitterV2.sol, src/messages/v2/MessageV2.sol and
// BurnMessageV2.sol): depositForBurn(uint256,uint32,bytes32,address,bytes32,uint256,uint32),
// receiveMessage(bytes,bytes), DepositForBurn(...), MessageSent(bytes), MessageReceived(...),
// MintAndWithdraw(...). The messages they emit and accept use the real v2 layout (148-byte header + the
// 228-byte BurnMessageV2 body). What they do NOT do: verify attestation signatures (any non-empty run of
// 65-byte chunks is accepted: the test plays Circle), rate limits, denylists, fee recipients by role.
pragma solidity 0.8.26;

interface IStandInToken {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
    function mint(address to, uint256 value) external;
    function burn(uint256 value) external;
}

interface IStandInMessageHandler {
    function handleReceiveFinalizedMessage(uint32 sourceDomain, bytes32 sender, uint32 finalityThresholdExecuted,
        bytes calldata messageBody) external returns (bool);
    function handleReceiveUnfinalizedMessage(uint32 sourceDomain, bytes32 sender, uint32 finalityThresholdExecuted,
        bytes calldata messageBody) external returns (bool);
}

contract MessageTransmitterV2StandIn {
    event MessageSent(bytes message);
    event MessageReceived(address indexed caller, uint32 sourceDomain, bytes32 indexed nonce, bytes32 sender,
        uint32 indexed finalityThresholdExecuted, bytes messageBody);

    uint32 public constant version = 1;
    uint32 public constant FINALITY_THRESHOLD_FINALIZED = 2000;
    uint32 public immutable localDomain;
    mapping(bytes32 => uint256) public usedNonces;

    constructor(uint32 domain) {
        localDomain = domain;
    }

    /// The source side, called by the local TokenMessenger: the message is emitted with nonce and
    /// finalityThresholdExecuted empty, as the real v2 transmitter does (Iris fills them in when it attests).
    function sendMessage(uint32 destinationDomain, bytes32 recipient, bytes32 destinationCaller,
        uint32 minFinalityThreshold, bytes calldata messageBody) external {
        bytes memory message = abi.encodePacked(version, localDomain, destinationDomain, bytes32(0),
            bytes32(uint256(uint160(msg.sender))), recipient, destinationCaller, minFinalityThreshold, uint32(0),
            messageBody);
        emit MessageSent(message);
    }

    function receiveMessage(bytes calldata message, bytes calldata attestation) external returns (bool) {
        require(attestation.length > 0 && attestation.length % 65 == 0, "stand-in: attestation length");
        require(message.length >= 148, "stand-in: message too short");
        require(uint32(bytes4(message[0:4])) == version, "stand-in: message version");
        require(uint32(bytes4(message[8:12])) == localDomain, "stand-in: wrong destination domain");
        bytes32 destinationCaller = bytes32(message[108:140]);
        require(destinationCaller == bytes32(0) || destinationCaller == bytes32(uint256(uint160(msg.sender))),
            "stand-in: invalid caller");
        bytes32 nonce = bytes32(message[12:44]);
        require(usedNonces[nonce] == 0, "stand-in: nonce already used");
        usedNonces[nonce] = 1;
        uint32 sourceDomain = uint32(bytes4(message[4:8]));
        bytes32 sender = bytes32(message[44:76]);
        address handler = address(uint160(uint256(bytes32(message[76:108]))));
        uint32 executed = uint32(bytes4(message[144:148]));
        bytes calldata body = message[148:];
        bool ok = executed >= FINALITY_THRESHOLD_FINALIZED
            ? IStandInMessageHandler(handler).handleReceiveFinalizedMessage(sourceDomain, sender, executed, body)
            : IStandInMessageHandler(handler).handleReceiveUnfinalizedMessage(sourceDomain, sender, executed, body);
        require(ok, "stand-in: handler failed");
        emit MessageReceived(msg.sender, sourceDomain, nonce, sender, executed, body);
        return true;
    }
}

contract TokenMessengerV2StandIn {
    event DepositForBurn(address indexed burnToken, uint256 amount, address indexed depositor, bytes32 mintRecipient,
        uint32 destinationDomain, bytes32 destinationTokenMessenger, bytes32 destinationCaller, uint256 maxFee,
        uint32 indexed minFinalityThreshold, bytes hookData);
    event MintAndWithdraw(address indexed mintRecipient, uint256 amount, address indexed mintToken,
        uint256 feeCollected);

    uint32 public constant messageBodyVersion = 1;
    MessageTransmitterV2StandIn public immutable localMessageTransmitter;
    address public immutable owner;
    address public feeRecipient;
    mapping(uint32 => bytes32) public remoteTokenMessengers;
    mapping(bytes32 => address) public localTokens; // keccak256(remoteDomain, remoteToken) -> local token

    constructor(address transmitter) {
        localMessageTransmitter = MessageTransmitterV2StandIn(transmitter);
        owner = msg.sender;
        feeRecipient = msg.sender;
    }

    function addRemoteTokenMessenger(uint32 domain, bytes32 tokenMessenger) external {
        require(msg.sender == owner, "stand-in: owner");
        remoteTokenMessengers[domain] = tokenMessenger;
    }

    function linkTokenPair(address localToken, uint32 remoteDomain, bytes32 remoteToken) external {
        require(msg.sender == owner, "stand-in: owner");
        localTokens[keccak256(abi.encodePacked(remoteDomain, remoteToken))] = localToken;
    }

    function depositForBurn(uint256 amount, uint32 destinationDomain, bytes32 mintRecipient, address burnToken,
        bytes32 destinationCaller, uint256 maxFee, uint32 minFinalityThreshold) external {
        require(amount > 0, "stand-in: amount");
        require(mintRecipient != bytes32(0), "stand-in: mint recipient");
        require(maxFee < amount, "stand-in: max fee");
        bytes32 destinationTokenMessenger = remoteTokenMessengers[destinationDomain];
        require(destinationTokenMessenger != bytes32(0), "stand-in: no remote token messenger");
        require(IStandInToken(burnToken).transferFrom(msg.sender, address(this), amount), "stand-in: transfer");
        IStandInToken(burnToken).burn(amount);
        bytes memory body = abi.encodePacked(messageBodyVersion, bytes32(uint256(uint160(burnToken))), mintRecipient,
            amount, bytes32(uint256(uint160(msg.sender))), maxFee, uint256(0), uint256(0));
        localMessageTransmitter.sendMessage(destinationDomain, destinationTokenMessenger, destinationCaller,
            minFinalityThreshold, body);
        emit DepositForBurn(burnToken, amount, msg.sender, mintRecipient, destinationDomain, destinationTokenMessenger,
            destinationCaller, maxFee, minFinalityThreshold, "");
    }

    function handleReceiveFinalizedMessage(uint32 sourceDomain, bytes32 sender, uint32, bytes calldata body)
        external returns (bool) {
        return _mint(sourceDomain, sender, body);
    }

    function handleReceiveUnfinalizedMessage(uint32 sourceDomain, bytes32 sender, uint32 executed,
        bytes calldata body) external returns (bool) {
        require(executed >= 500, "stand-in: unsupported finality threshold");
        uint256 expirationBlock = uint256(bytes32(body[196:228]));
        require(expirationBlock == 0 || block.number < expirationBlock, "stand-in: message expired");
        return _mint(sourceDomain, sender, body);
    }

    function _mint(uint32 sourceDomain, bytes32 sender, bytes calldata body) internal returns (bool) {
        require(msg.sender == address(localMessageTransmitter), "stand-in: only the local transmitter");
        require(sender != bytes32(0) && sender == remoteTokenMessengers[sourceDomain], "stand-in: unknown sender");
        require(body.length >= 228, "stand-in: burn body too short");
        require(uint32(bytes4(body[0:4])) == messageBodyVersion, "stand-in: body version");
        address recipient = address(uint160(uint256(bytes32(body[36:68]))));
        uint256 amount = uint256(bytes32(body[68:100]));
        uint256 maxFee = uint256(bytes32(body[132:164]));
        uint256 feeExecuted = uint256(bytes32(body[164:196]));
        require(feeExecuted <= maxFee && feeExecuted < amount, "stand-in: fee");
        address token = localTokens[keccak256(abi.encodePacked(sourceDomain, bytes32(body[4:36])))];
        require(token != address(0), "stand-in: no local token");
        IStandInToken(token).mint(recipient, amount - feeExecuted);
        if (feeExecuted > 0) {
            IStandInToken(token).mint(feeRecipient, feeExecuted);
        }
        emit MintAndWithdraw(recipient, amount - feeExecuted, token, feeExecuted);
        return true;
    }
}
