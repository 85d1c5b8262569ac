"use strict";
// The watchdog of a `qwen serve` daemon the package started (core/serve/watchdog.py
// starts it beside the daemon, with the node that runs the daemon): it ends the
// daemon's process group once the daemon has had no client (no event stream open)
// and no running turn for the set time, or once one of its folders is gone, and it
// ends itself when the daemon is gone. qwen 0.24.4 reaps idle sessions and agents,
// never the daemon itself, and Sublime may not be running to do it.
// Its settings, the daemon's token among them, come on stdin as one JSON object:
// never in argv, where every local user can read them.

const fs = require("fs");
const http = require("http");
const { spawn, spawnSync } = require("child_process");

const REQUEST_TIMEOUT_MS = 10000;
const TERM_GRACE_MS = 5000;
const WATCHING = "--watching"; // the detached copy that watches

function log(message) {
  process.stderr.write(`qwen serve watchdog: ${message}\n`);
}

function readSettings() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on("data", (chunk) => chunks.push(chunk));
    process.stdin.on("end", () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch (error) {
        reject(error);
      }
    });
    process.stdin.on("error", reject);
  });
}

// The daemon's own account of its clients and work: {status, body}, or null when
// nothing answers (the daemon is gone).
function health(settings) {
  return new Promise((resolve) => {
    const request = http.get({
      host: settings.host,
      port: settings.port,
      path: "/health?deep=1",
      headers: { Authorization: `Bearer ${settings.token}` },
      timeout: REQUEST_TIMEOUT_MS,
    }, (response) => {
      const chunks = [];
      response.on("data", (chunk) => chunks.push(chunk));
      response.on("end", () => {
        let body = null;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        } catch (error) {
          body = null;
        }
        resolve({ status: response.statusCode, body });
      });
      response.on("error", () => resolve({ status: 0, body: null }));
    });
    request.on("timeout", () => request.destroy(new Error("timed out")));
    request.on("error", (error) => resolve(error.message === "timed out" ? { status: 0, body: null } : null));
  });
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

// Idle: no reader of any session's events (a chat keeps one open while it is
// attached), no turn, no question waiting. An answer of another shape is not idle.
function idle(body) {
  if (body === null || typeof body !== "object") return false;
  const counts = [body.connectedClients, body.activePrompts, body.pendingPermissions];
  return counts.every((count) => count === 0) && body.activeWork === false;
}

function folderGone(settings) {
  return settings.folders.find((folder) => !fs.existsSync(folder));
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function endDaemon(settings, why) {
  log(`ending the daemon (pid ${settings.pid}): ${why}`);
  if (process.platform === "win32") {
    spawnSync("taskkill", ["/T", "/F", "/PID", String(settings.pid)], { stdio: "ignore", windowsHide: true });
    return;
  }
  try {
    process.kill(-settings.pid, "SIGTERM"); // the daemon ends its agents on SIGTERM
  } catch (error) {
    return;
  }
  const deadline = Date.now() + TERM_GRACE_MS;
  while (alive(settings.pid) && Date.now() < deadline) await sleep(100);
  try {
    process.kill(-settings.pid, "SIGKILL"); // whatever of its group is left
  } catch (error) {
    // all gone
  }
}

async function watch(settings) {
  let idleSince = null;
  for (;;) {
    if (!alive(settings.pid)) return log("the daemon is gone");
    const answer = await health(settings);
    if (answer === null) return log("the daemon does not answer: gone");
    if (answer.status === 401 || answer.status === 403) return log("the port refuses the daemon's token: not ours");
    const gone = folderGone(settings);
    if (answer.status === 200 && gone !== undefined) return endDaemon(settings, `its folder ${gone} is gone`);
    if (answer.status === 200 && idle(answer.body)) {
      idleSince = idleSince === null ? Date.now() : idleSince;
      if (Date.now() - idleSince >= settings.idleMs) {
        return endDaemon(settings, `no client and no turn for ${Math.round((Date.now() - idleSince) / 1000)} s`);
      }
    } else {
      idleSince = null;
    }
    await sleep(settings.pollMs);
  }
}

// Started by the package, it starts itself again detached and exits, so it is
// never a child the plugin host must reap (nor a zombie of it once it ends).
function detach(settings) {
  const child = spawn(process.execPath, [__filename, WATCHING], {
    detached: true,
    stdio: ["pipe", "inherit", "inherit"],
    windowsHide: true,
  });
  child.stdin.end(JSON.stringify(settings));
  child.unref();
}

readSettings().then((settings) => (process.argv.includes(WATCHING) ? watch(settings) : detach(settings)))
  .catch((error) => {
    log(`stopped: ${error && error.message}`);
    process.exitCode = 1;
  });
