// End to end with the TypeScript client alone, against a running `routequote` server whose EVM chains are anvil
// nodes (driven by tests/e2e/test_ts_client_anvil.py): quote -> prepare -> verify (the client refuses anything
// its verifier does not pass) -> sign with a test key (viem) -> submit to anvil; or one session carried to
// `complete`: create, sign and send its verified action, observe the hashes, read it back.
// Usage: node scripts/e2e-anvil.mjs <config.json> one-shot|session     (after `npm run build`)
// config: {baseUrl, route: "base:ETH->base:USDC", amountUsd, walletChains, rpcUrls: {chain: url},
//          chainIds: {chain: id}, wallet, key (a throwaway test key), deployments}. Prints one JSON object; exits non-zero on any failure.
import { readFile } from "node:fs/promises";
import { createPublicClient, createWalletClient, defineChain, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { RouteQuoteClient, evmSendRequests } from "../dist/src/index.js";

const [configPath, mode] = process.argv.slice(2);
const config = JSON.parse(await readFile(configPath, "utf8"));
const account = privateKeyToAccount(config.key);
if (account.address.toLowerCase() !== config.wallet.toLowerCase()) throw new Error("the key is not the wallet's");

const client = new RouteQuoteClient({
  baseUrl: config.baseUrl,
  deployments: config.deployments,
  // local chains: bounds modelled from the embedded snapshot and the development fee recipient, said so
  acceptModelledBounds: true,
  acceptUnconfiguredFeeRecipient: true,
});

function chainClients(name) {
  const url = config.rpcUrls[name];
  const chain = defineChain({ id: config.chainIds[name], name, nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [url] } } });
  return {
    chain,
    wallet: createWalletClient({ account, chain, transport: http(url) }),
    reader: createPublicClient({ chain, transport: http(url), pollingInterval: 50 }),
  };
}

/** Signs and sends each transaction of a verified action in order, each after the previous one is mined. */
async function signAndSend(action) {
  const unsigned = action.raw.unsigned_action;
  const name = unsigned.source.split(":")[0];
  const { chain, wallet, reader } = chainClients(name);
  const sent = [];
  for (const request of evmSendRequests(action)) {
    if (request.chainId !== chain.id) throw new Error(`a transaction for chain ${request.chainId}, not ${chain.id}`);
    const hash = await wallet.sendTransaction({ to: request.to, data: request.data, value: request.value });
    const receipt = await reader.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`transaction ${hash} reverted`);
    sent.push(hash);
  }
  return sent;
}

const [from, to] = config.route.split("->");
const wallets = Object.fromEntries(config.walletChains.map((c) => [c, config.wallet]));
const quote = await client.quote(from, to, config.amountUsd);
const out = { route: config.route, quoteId: quote.quoteId, minimumOutputBase: String(quote.minimumOutputBase) };

if (mode === "one-shot") {
  const action = await client.prepare(quote, wallets);
  out.warnings = action.warnings.map((f) => f.code).sort();
  out.inputAmount = String(action.inputAmount);
  out.minimumOutput = String(action.minimumOutput);
  out.hashes = await signAndSend(action);
} else if (mode === "session") {
  let session = await client.createSession(quote, wallets);
  out.sessionId = session.sessionId;
  out.statuses = [session.status];
  out.hashes = [];
  // a guard against a server that never finishes: each round signs one verified action or observes once
  for (let round = 0; round < 20 && session.status !== "complete"; round++) {
    const action = session.currentAction;
    if (action !== null) {
      const hashes = await signAndSend(action);
      out.hashes.push(...hashes);
      session = await client.observe(session.handle, { transactionHashes: hashes });
    } else {
      session = await client.observe(session.handle);
    }
    out.statuses.push(session.status);
  }
  const final = await client.readSession(session.handle);
  out.status = final.status;
  out.funds = final.raw.funds ?? null;
  out.receipt = await client.readReceipt(session.handle);
} else {
  throw new Error(`unknown mode ${mode}`);
}
process.stdout.write(JSON.stringify(out));
