// Starts what the browser tests run against, all on loopback: the scripted upstream (model and
// search), the official MCP "everything" server, the OAuth-protected MCP servers built on the
// official TypeScript SDK and on the Python SDK (when its venv is installed), and a real promptgate
// binary on a fresh SQLite database serving the built app.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startUpstream } from './upstream.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const web = path.resolve(here, '..');
const repo = path.resolve(web, '..');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function waitFor(url: string, what: string, child?: ChildProcess, log?: () => string) {
  for (let i = 0; i < 300; i++) {
    if (child && child.exitCode !== null) throw new Error(`${what} exited early:\n${log?.() ?? ''}`);
    try {
      const res = await fetch(url, { method: 'GET' });
      if (res.status < 500) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} never answered at ${url}:\n${log?.() ?? ''}`);
}

export default async function globalSetup() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'promptgate-browser-'));
  const upstream = await startUpstream();
  const upstreamPort = (upstream.address() as net.AddressInfo).port;
  const children: ChildProcess[] = [];

  const everything =
    process.env.PROMPTGATE_TEST_NODE_PEERS_DIR ?? path.join(repo, 'crates/promptgate-mcp/tests/peers');
  const mcpEntry = path.join(everything, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
  if (!fs.existsSync(mcpEntry)) throw new Error(`${mcpEntry} is missing: run crates/promptgate-mcp/tests/peers/install.sh`);
  const mcpPort = await freePort();
  const mcp = spawn(process.execPath, [mcpEntry, 'streamableHttp'], { env: { ...process.env, PORT: String(mcpPort) }, stdio: 'ignore' });
  children.push(mcp);
  // The TypeScript SDK's auth peer: its authorization server reads the gateway's client metadata
  // document and shows a consent page with an "Allow" button.
  const tsAuthPort = await freePort();
  const tsAuthPeer = spawn(
    process.execPath,
    [path.join(repo, 'crates/promptgate-mcp/tests/peers/ts_auth_peer.mjs'), String(tsAuthPort), '3600', '--cimd', '--consent-page'],
    { stdio: 'ignore' },
  );
  children.push(tsAuthPeer);

  // The Python SDK's peers: the auth peer (an authorization server and MCP server in one,
  // consenting at once) and the server whose tool asks the user mid-call (elicitation). Without
  // their Python the tests that need them skip, except in CI.
  const python = process.env.PROMPTGATE_TEST_PY_PEER_PYTHON;
  if (!python && process.env.CI === 'true') throw new Error('PROMPTGATE_TEST_PY_PEER_PYTHON is not set: run crates/promptgate-mcp/tests/peers/install.sh');
  const authPort = python ? await freePort() : 0;
  const authPeer = python
    ? spawn(python, [path.join(repo, 'crates/promptgate-mcp/tests/peers/py_auth_peer.py'), String(authPort)], { stdio: 'ignore' })
    : undefined;
  if (authPeer) children.push(authPeer);
  const elicitPort = python ? await freePort() : undefined;
  if (python && elicitPort) {
    const script = path.join(repo, 'crates/promptgate-mcp/tests/peers/py_elicit_peer.py');
    children.push(spawn(python, [script, String(elicitPort)], { stdio: 'ignore' }));
  }

  const stopAll = () => {
    for (const child of children) child.kill('SIGTERM');
  };
  try {
    return await startGateways();
  } catch (e) {
    stopAll();
    upstream.close();
    throw e;
  }

  async function startGateways() {
  const bin = process.env.PROMPTGATE_BIN ?? path.join(repo, 'target/debug/promptgate');
  // The config file says everything; overrides meant for another gateway must not leak in.
  const env: NodeJS.ProcessEnv = { ...process.env, PROMPTGATE_LOG: 'warn' };
  for (const key of ['DATABASE_URL', 'PROMPTGATE_LISTEN', 'PROMPTGATE_AUTH_MODE', 'PROMPTGATE_CONFIG', 'PROMPTGATE_DEFAULT_MODEL']) delete env[key];

  /// Starts a gateway on a fresh SQLite database; `extra` is appended to its config file.
  async function gateway(name: string, mode: string, extra: string) {
    const port = await freePort();
    const dir = path.join(tmp, name);
    fs.mkdirSync(dir);
    const configPath = path.join(dir, 'promptgate.toml');
    // `{base}` in `extra` is where browsers reach this gateway.
    extra = extra.replaceAll('{base}', `http://127.0.0.1:${port}`);
    fs.writeFileSync(
      configPath,
      `listen = "127.0.0.1:${port}"
database_url = "sqlite://${dir}/promptgate.db?mode=rwc"
default_model = "demo"

[auth]
mode = "${mode}"

[ui]
dir = "${path.join(web, 'dist')}"

[[providers]]
name = "demo"
kind = "demo"

[[models]]
id = "demo"
name = "promptgate demo (offline)"
provider = "demo"
upstream_model = "demo"
${extra}`,
    );
    let log = '';
    const child = spawn(bin, ['serve', '--config', configPath], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (d) => (log += d));
    child.stderr?.on('data', (d) => (log += d));
    children.push(child);
    const base = `http://127.0.0.1:${port}`;
    await waitFor(`${base}/readyz`, `promptgate (${name})`, child, () => log);
    return { base, configPath };
  }

  const { base } = await gateway(
    'single-user',
    'single_user',
    `
[web]
search = { kind = "searxng", base_url = "http://127.0.0.1:${upstreamPort}" }
# The scripted upstream also serves one page the "verify" script reads.
fetch = { allowed_addrs = ["127.0.0.1:${upstreamPort}"] }

# A reload mid-answer lets the turn run on, so the app can resume its stream.
[turn]
on_disconnect = "continue"

# Traces go to the scripted upstream's collector stand-in; the inspector links each answer to a
# trace UI that need not exist for the link to be checked.
# OAuth for MCP servers sends the browser back to this gateway, which serves its client metadata
# document on this plain http loopback base for the test.
[mcp]
oauth_redirect_base_url = "{base}"
oauth_client_metadata_over_http = true

[telemetry]
enabled = true
endpoint = "http://127.0.0.1:${upstreamPort}"
trace_ui_url = "http://traces.test/trace/{trace_id}"

[[providers]]
name = "scripted"
kind = "openai"
base_url = "http://127.0.0.1:${upstreamPort}/v1"

[[models]]
id = "scripted"
name = "Scripted upstream"
provider = "scripted"
upstream_model = "upstream-model"
`,
  );
  // A second offline model and a price, so the admin view's usage chart has models and cost to show.
  const tokens = await gateway(
    'tokens',
    'tokens',
    `
[[models]]
id = "demo-lite"
name = "promptgate demo, second model"
provider = "demo"
upstream_model = "demo"

[[prices]]
model = "demo"
input = 1000.0
output = 2000.0
`,
  );
  const created = spawnSync(bin, ['--config', tokens.configPath, 'users', 'create', 'ada'], { env, encoding: 'utf8' });
  const token = /\b(pg_[A-Za-z0-9_-]+)/.exec(created.stdout ?? '')?.[1];
  if (!token) throw new Error(`users create printed no token:\n${created.stdout}\n${created.stderr}`);
  const root = spawnSync(bin, ['--config', tokens.configPath, 'users', 'create', 'root', '--admin'], { env, encoding: 'utf8' });
  const adminToken = /\b(pg_[A-Za-z0-9_-]+)/.exec(root.stdout ?? '')?.[1];
  if (!adminToken) throw new Error(`users create --admin printed no token:\n${root.stdout}\n${root.stderr}`);
  await waitFor(`http://127.0.0.1:${mcpPort}/mcp`, 'server-everything', mcp);
  await waitFor(`http://127.0.0.1:${tsAuthPort}/test/stats`, 'the TypeScript auth peer', tsAuthPeer);
  process.env.PROMPTGATE_TS_AUTH_MCP_URL = `http://127.0.0.1:${tsAuthPort}/mcp`;
  if (authPeer) {
    await waitFor(`http://127.0.0.1:${authPort}/mcp`, 'the Python auth peer', authPeer);
    process.env.PROMPTGATE_AUTH_MCP_URL = `http://127.0.0.1:${authPort}/mcp`;
  }

  process.env.PROMPTGATE_TOKENS_BASE_URL = tokens.base;
  process.env.PROMPTGATE_TEST_TOKEN = token;
  process.env.PROMPTGATE_ADMIN_TOKEN = adminToken;
  process.env.PROMPTGATE_BASE_URL = base;
  process.env.PROMPTGATE_MCP_URL = `http://127.0.0.1:${mcpPort}/mcp`;
  if (elicitPort) {
    await waitFor(`http://127.0.0.1:${elicitPort}/mcp`, 'the Python elicitation peer');
    process.env.PROMPTGATE_ELICIT_MCP_URL = `http://127.0.0.1:${elicitPort}/mcp`;
  }
  process.env.PROMPTGATE_SCREENSHOTS = process.env.PROMPTGATE_SCREENSHOTS ?? path.join(web, 'screenshots');
  fs.mkdirSync(process.env.PROMPTGATE_SCREENSHOTS, { recursive: true });

  return async () => {
    stopAll();
    await new Promise<void>((r) => upstream.close(() => r()));
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  }
}
