// A real update source for the browser tests: a static HTTP server on 127.0.0.1 serving
// what the test puts in `files`, and a minisign key pair made with node's Ed25519 so the
// test can publish correctly signed artifacts. The signature is minisign's pre-hashed
// form (what `minisign -S` writes): Ed25519 over the BLAKE2b-512 of the file, then a
// global signature over that signature and the trusted comment.

import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { createServer } from 'node:http';

/** Starts the source; `url` is its base, `publicKey` the line for `[updates] public_key`. */
export async function startUpdateSource() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const pk = Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url');
  const keyId = randomBytes(8);
  /** @type {Map<string, Buffer>} */
  const files = new Map();
  const http = createServer((req, res) => {
    const body = files.get(new URL(req.url, 'http://x').pathname);
    if (!body) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-length': body.length }).end(body);
  });
  await new Promise((ok) => http.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${http.address().port}`;
  return {
    url,
    publicKey: Buffer.concat([Buffer.from('Ed'), keyId, pk]).toString('base64'),
    files,
    /** The minisign signature file text of `data`. */
    sign(data) {
      const sig = sign(null, createHash('blake2b512').update(data).digest(), privateKey);
      const trusted = `timestamp:${Math.floor(Date.now() / 1000)}\tfile:bootlane`;
      const global = sign(null, Buffer.concat([sig, Buffer.from(trusted)]), privateKey);
      return (
        'untrusted comment: signature from the bootlane ui test key\n' +
        `${Buffer.concat([Buffer.from('ED'), keyId, sig]).toString('base64')}\n` +
        `trusted comment: ${trusted}\n${global.toString('base64')}\n`
      );
    },
    /** Publishes `manifest` at `/manifest.json`. */
    manifest(m) {
      files.set('/manifest.json', Buffer.from(JSON.stringify(m)));
    },
    close: () =>
      new Promise((ok) => {
        http.close(ok);
        http.closeAllConnections();
      }),
  };
}
