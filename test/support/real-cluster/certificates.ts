// The certificates a test cluster needs, made with the openssl command line (X.509 is not
// something node:crypto writes): a CA, the apiserver's serving certificate, client
// certificates whose subject is the Kubernetes identity (CN = user, O = groups, as the
// apiserver's x509 authenticator reads them), and the service-account signing key pair.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

export interface KeyPair {
  cert: string;
  key: string;
}

/** A self-signed CA, `<dir>/ca.crt` and `<dir>/ca.key`. */
export async function createCertificateAuthority(dir: string): Promise<KeyPair> {
  const pair = { cert: join(dir, "ca.crt"), key: join(dir, "ca.key") };
  await run("openssl", [
    "req", "-x509", ...EC_KEY, "-keyout", pair.key, "-out", pair.cert, "-days", "30", "-subj", "/CN=berth-test-cluster-ca",
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
  ]);
  return pair;
}

export interface CertificateRequest {
  /** File name stem under the directory. */
  name: string;
  /** Common name: the user name for a client certificate. */
  commonName: string;
  /** Organisations: the groups for a client certificate. */
  organisations?: readonly string[];
  /** Subject alternative names for a serving certificate, e.g. `IP:10.244.0.1`, `DNS:kubernetes`. */
  altNames?: readonly string[];
}

/** A certificate signed by `ca`: client and server use both, so one certificate can do either job. */
export async function issueCertificate(ca: KeyPair, dir: string, request: CertificateRequest): Promise<KeyPair> {
  const pair = { cert: join(dir, `${request.name}.crt`), key: join(dir, `${request.name}.key`) };
  const subject = [...(request.organisations ?? []).map((o) => `/O=${o}`), `/CN=${request.commonName}`].join("");
  const extensions = [
    "basicConstraints=critical,CA:FALSE",
    "keyUsage=critical,digitalSignature,keyEncipherment",
    "extendedKeyUsage=serverAuth,clientAuth",
    ...(request.altNames?.length ? [`subjectAltName=${request.altNames.join(",")}`] : []),
  ];
  await run("openssl", [
    "req", "-x509", ...EC_KEY, "-CA", ca.cert, "-CAkey", ca.key, "-keyout", pair.key, "-out", pair.cert, "-days", "30",
    "-subj", subject, ...extensions.flatMap((e) => ["-addext", e]),
  ]);
  return pair;
}

/** The key pair the apiserver signs service-account tokens with, and verifies them by. */
export async function createServiceAccountKeys(dir: string): Promise<{ privateKey: string; publicKey: string }> {
  const keys = { privateKey: join(dir, "service-account.key"), publicKey: join(dir, "service-account.pub") };
  await run("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", keys.privateKey]);
  await run("openssl", ["pkey", "-in", keys.privateKey, "-pubout", "-out", keys.publicKey]);
  return keys;
}
