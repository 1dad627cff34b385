// The server key tests seal with (BERTH_SECRET_KEY): fixed, so an in-process app and a
// separate `berth serve` or dispatcher process can share one database's sealed values.
import { decodeSecretKey, loadKeyring } from "../../src/domain/secret-envelope.ts";

export const TEST_SECRET_KEY = "dGVzdC1zZXJ2ZXIta2V5LTAxMjM0NTY3ODlhYmNkZWY=";
export const TEST_SECRET_KEYS = await loadKeyring(decodeSecretKey(TEST_SECRET_KEY));
