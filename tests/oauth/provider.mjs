#!/usr/bin/env node
// A real OpenID provider for the authorization tests: oidc-provider (an
// OpenID Certified implementation, from the npm registry), on loopback,
// issuing client-credentials access tokens as JWTs (RFC 9068) for the
// resource the client names (RFC 8707), with a `tenant` claim per client.
//
//   node provider.mjs keys --out FILE                 an ES256 signing key (private JWK set)
//   node provider.mjs serve --keys FILE[,FILE] --resource URI [--port N]
//        prints {"issuer", "address"} and serves until killed; the first key signs,
//        the others are still published (a rotation in progress); POST /test/refresh-token
//        answers {"refresh_token"}, a real refresh token of opaque-client for the resource
//   node provider.mjs forge --keys FILE --issuer URL --resource URI --kind KIND
//        prints a token signed with the first key of FILE (valid), or one no provider
//        would issue: expired, alg-none, hs256-with-public-key, untyped, rs256-on-ec-key,
//        cnf (bound to a DPoP key), crit (a critical header extension)
//
// The clients (secret = id + "-secret"):
//   acme-client      tenant "acme",     may ask for scope "prompts"
//   acme-bob-client  tenant "acme",     scope "prompts": another user (subject) of the same tenant
//   notenant-client  no tenant claim,   scope "prompts"
//   globex-client    tenant "globex",   may ask for scope "prompts"
//   initech-client   tenant "initech" (no such tenant on the server), scope "prompts"
//   noscope-client   tenant "acme",     may ask only for scope "profile-only"
//   opaque-client    tenant "acme",     scope "prompts", but its tokens are opaque (RFC 7662)
//   prompt-host      the resource server itself, introspecting opaque tokens

import fs from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';
import * as jose from 'jose';
import Provider from 'oidc-provider';

const TENANTS = {
  'acme-client': 'acme',
  'acme-bob-client': 'acme',
  'globex-client': 'globex',
  'initech-client': 'initech',
  'noscope-client': 'acme',
  'opaque-client': 'acme',
};

function client(id, scope) {
  return {
    client_id: id,
    client_secret: `${id}-secret`,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope,
    // The provider signs with ES256 keys only.
    id_token_signed_response_alg: 'ES256',
  };
}

async function keys({ out }) {
  const { privateKey } = await jose.generateKeyPair('ES256', { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  jwk.kid = `key-${crypto.randomUUID().slice(0, 8)}`;
  jwk.alg = 'ES256';
  jwk.use = 'sig';
  fs.writeFileSync(out, JSON.stringify({ keys: [jwk] }));
  console.log(JSON.stringify({ kid: jwk.kid, file: out }));
}

function readKeys(files) {
  return files.split(',').flatMap((file) => JSON.parse(fs.readFileSync(file, 'utf8')).keys);
}

async function serve({ keys: files, resource, port }) {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(Number(port ?? 0), '127.0.0.1', resolve));
  const address = `127.0.0.1:${server.address().port}`;
  const issuer = `http://${address}`;
  const provider = new Provider(issuer, {
    clients: [
      client('acme-client', 'prompts'),
      client('acme-bob-client', 'prompts'),
      client('notenant-client', 'prompts'),
      client('globex-client', 'prompts'),
      client('initech-client', 'prompts'),
      client('noscope-client', 'profile-only'),
      client('opaque-client', 'prompts'),
      client('prompt-host', 'prompts'),
    ],
    jwks: { keys: readKeys(files) },
    scopes: ['openid', 'offline_access', 'prompts', 'profile-only'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true, allowedPolicy: (_ctx, client) => client.clientId === 'prompt-host' },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        // Any resource a client names gets a JWT for it: the tests ask for
        // another audience than the server's on purpose.
        getResourceServerInfo: (_ctx, indicator, client) => ({
          scope: 'prompts profile-only',
          audience: indicator,
          accessTokenTTL: 300,
          accessTokenFormat: client.clientId === 'opaque-client' ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    extraTokenClaims: (_ctx, token) => (token.clientId in TENANTS ? { tenant: TENANTS[token.clientId] } : {}),
  });
  const callback = provider.callback();
  server.on('request', async (req, res) => {
    // A real refresh token of the provider's own (its model, its storage, its
    // introspection): client credentials issue none, and the flows that do
    // need a browser.
    if (req.method === 'POST' && req.url === '/test/refresh-token') {
      const client = await provider.Client.find('opaque-client');
      const grant = new provider.Grant({ accountId: 'alice', clientId: client.clientId });
      grant.addOIDCScope('openid offline_access');
      grant.addResourceScope(resource, 'prompts');
      const grantId = await grant.save();
      const token = new provider.RefreshToken({
        accountId: 'alice', client, grantId, gty: 'authorization_code', scope: 'openid offline_access prompts', resource,
      });
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ refresh_token: await token.save() }));
      return;
    }
    callback(req, res);
  });
  console.log(JSON.stringify({ issuer, address }));
}

async function forge({ keys: file, issuer, resource, kind }) {
  const [jwk] = readKeys(file);
  const now = Math.floor(Date.now() / 1000);
  const claims = { iss: issuer, aud: resource, sub: 'acme-client', client_id: 'acme-client', scope: 'prompts', tenant: 'acme' };
  const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  let token;
  switch (kind) {
    case 'valid':
      token = await new jose.SignJWT({ ...claims })
        .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'at+jwt' })
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(await jose.importJWK(jwk, 'ES256'));
      break;
    case 'short-lived':
      // Valid for 3 seconds: a stream it opens must end when it does.
      token = await new jose.SignJWT({ ...claims })
        .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'at+jwt' })
        .setIssuedAt(now)
        .setExpirationTime(now + 3)
        .sign(await jose.importJWK(jwk, 'ES256'));
      break;
    case 'numeric-sub':
      // RFC 7519 makes sub a string: 42 is not a subject, nor no subject.
      token = await new jose.SignJWT({ ...claims, sub: 42 })
        .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'at+jwt' })
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(await jose.importJWK(jwk, 'ES256'));
      break;
    case 'untyped':
      // An ID-token-like JWT: right audience, but not typed as an access token.
      token = await new jose.SignJWT({ ...claims })
        .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'JWT' })
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(await jose.importJWK(jwk, 'ES256'));
      break;
    case 'rs256-on-ec-key': {
      // Signed with an RSA key of the forger's, naming the issuer's EC key.
      const { privateKey } = await jose.generateKeyPair('RS256');
      token = await new jose.SignJWT({ ...claims })
        .setProtectedHeader({ alg: 'RS256', kid: jwk.kid, typ: 'at+jwt' })
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(privateKey);
      break;
    }
    case 'cnf':
      // Bound to a DPoP key (RFC 9449): the bearer alone must not count.
      token = await new jose.SignJWT({ ...claims, cnf: { jkt: '0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I' } })
        .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'at+jwt' })
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(await jose.importJWK(jwk, 'ES256'));
      break;
    case 'crit':
      // A critical header extension the resource server cannot know (RFC 7515 §4.1.11).
      token = await new jose.SignJWT({ ...claims })
        .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'at+jwt', crit: ['urn:example:bound'], 'urn:example:bound': true })
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(await jose.importJWK(jwk, 'ES256'), { crit: { 'urn:example:bound': true } });
      break;
    case 'expired':
      token = await new jose.SignJWT({ ...claims })
        .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'at+jwt' })
        .setIssuedAt(now - 7200)
        .setExpirationTime(now - 3600)
        .sign(await jose.importJWK(jwk, 'ES256'));
      break;
    case 'alg-none':
      token = `${b64({ alg: 'none', typ: 'at+jwt' })}.${b64({ ...claims, iat: now, exp: now + 300 })}.`;
      break;
    case 'hs256-with-public-key': {
      // The classic confusion: the issuer's public key used as an HMAC secret.
      const { d, ...publicJwk } = jwk;
      const secret = new TextEncoder().encode(JSON.stringify(publicJwk));
      token = await new jose.SignJWT({ ...claims })
        .setProtectedHeader({ alg: 'HS256', kid: jwk.kid, typ: 'at+jwt' })
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(secret);
      break;
    }
    default:
      throw new Error(`unknown kind ${kind}`);
  }
  console.log(token);
}

const [command, ...rest] = process.argv.slice(2);
const { values } = parseArgs({
  args: rest,
  options: {
    out: { type: 'string' },
    keys: { type: 'string' },
    resource: { type: 'string' },
    port: { type: 'string' },
    issuer: { type: 'string' },
    kind: { type: 'string' },
  },
});
await { keys, serve, forge }[command](values);
