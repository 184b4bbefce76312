export { canonicalJson, canonicalSha256, sha256Hex } from "./canonical.js";
export { assertBundleOk, verifyBundle, NOT_PORTED_CODE, type Intent, type VerifyOptions } from "./verify/bundle.js";
export { BundleRejected, type Finding } from "./verify/common.js";
