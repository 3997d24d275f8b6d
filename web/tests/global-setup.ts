// Starts what the browser tests run against, all on loopback: the scripted upstream (model and
// search), the official MCP "everything" server, and a real promptgate binary on a fresh SQLite
// database serving the built app.
import { spawn, type ChildProcess } from 'node:child_process';
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

  const gatewayPort = await freePort();
  const config = `
listen = "127.0.0.1:${gatewayPort}"
database_url = "sqlite://${tmp}/promptgate.db?mode=rwc"
default_model = "demo"

[auth]
mode = "single_user"

[web]
search = { kind = "searxng", base_url = "http://127.0.0.1:${upstreamPort}" }

[ui]
dir = "${path.join(web, 'dist')}"

[[providers]]
name = "demo"
kind = "demo"

[[providers]]
name = "scripted"
kind = "openai"
base_url = "http://127.0.0.1:${upstreamPort}/v1"

[[models]]
id = "demo"
name = "promptgate demo (offline)"
provider = "demo"
upstream_model = "demo"

[[models]]
id = "scripted"
name = "Scripted upstream"
provider = "scripted"
upstream_model = "upstream-model"
`;
  const configPath = path.join(tmp, 'promptgate.toml');
  fs.writeFileSync(configPath, config);
  const bin = process.env.PROMPTGATE_BIN ?? path.join(repo, 'target/debug/promptgate');
  let gatewayLog = '';
  // The config file says everything; overrides meant for another gateway must not leak in.
  const env: NodeJS.ProcessEnv = { ...process.env, PROMPTGATE_LOG: 'warn' };
  for (const key of ['DATABASE_URL', 'PROMPTGATE_LISTEN', 'PROMPTGATE_AUTH_MODE', 'PROMPTGATE_CONFIG', 'PROMPTGATE_DEFAULT_MODEL']) delete env[key];
  const gateway = spawn(bin, ['serve', '--config', configPath], {
    cwd: tmp,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  gateway.stdout?.on('data', (d) => (gatewayLog += d));
  gateway.stderr?.on('data', (d) => (gatewayLog += d));
  children.push(gateway);

  const base = `http://127.0.0.1:${gatewayPort}`;
  await waitFor(`${base}/readyz`, 'promptgate', gateway, () => gatewayLog);
  await waitFor(`http://127.0.0.1:${mcpPort}/mcp`, 'server-everything', mcp);

  process.env.PROMPTGATE_BASE_URL = base;
  process.env.PROMPTGATE_MCP_URL = `http://127.0.0.1:${mcpPort}/mcp`;
  process.env.PROMPTGATE_SCREENSHOTS = process.env.PROMPTGATE_SCREENSHOTS ?? path.join(web, 'screenshots');
  fs.mkdirSync(process.env.PROMPTGATE_SCREENSHOTS, { recursive: true });

  return async () => {
    for (const child of children) child.kill('SIGTERM');
    await new Promise<void>((r) => upstream.close(() => r()));
    fs.rmSync(tmp, { recursive: true, force: true });
  };
}
