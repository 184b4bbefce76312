/** The fee-recipient rule (port of core/fee_recipient.py): an action whose fee would go to a development
 * placeholder is refused unless the caller explicitly accepts it (tests, local chains). */
import type { Finding } from "./common.js";
import { isObj } from "./common.js";

export const DEV_FEE_RECIPIENT_EVM = "0x00000000000000000000000000000000dEAdfeE1";
export const DEV_FEE_RECIPIENT_SOLANA = "DevFeeRecipientP1aceho1der11111111111111111";
export const FEE_RECIPIENT_REFUSAL_CODE = "fee_recipient_not_configured";

export function isPlaceholder(address: unknown): boolean {
  if (typeof address !== "string") return false;
  return address.toLowerCase() === DEV_FEE_RECIPIENT_EVM.toLowerCase() || address === DEV_FEE_RECIPIENT_SOLANA;
}

/** [] or the one error finding; the bundle's own flag and the receipt's recipient are both checked. */
export function feeRecipientFindings(bundle: unknown, acceptUnconfigured = false): Finding[] {
  if (acceptUnconfigured || !isObj(bundle)) return [];
  const action = bundle["unsigned_action"];
  const receipt = isObj(action) ? action["safety_receipt"] : undefined;
  const fee = isObj(receipt) ? receipt["service_fee"] : undefined;
  const recipient = isObj(fee) ? fee["recipient"] : undefined;
  if (bundle["fee_recipient_configured"] === false || isPlaceholder(recipient)) {
    return [
      {
        code: FEE_RECIPIENT_REFUSAL_CODE,
        message:
          "the service fee recipient is a development placeholder, not the operator's own address: the fee " +
          "would go nowhere. Refused; accept it explicitly only for tests (acceptUnconfiguredFeeRecipient)",
        severity: "error",
      },
    ];
  }
  return [];
}
