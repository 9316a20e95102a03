//! AIMock (npm `@copilotkit/aimock`), the third-party mock server for conformance tests:
//! installed on first use into the target directory with npm (pinned version, no global
//! install), started per test on a free loopback port with `fixtures.json`, stopped by its
//! process id when the test ends.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The pinned AIMock version.
pub const VERSION: &str = "1.43.0";

/// A running AIMock; killed when dropped.
pub struct Aimock {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    child: Child,
}

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn install_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("aimock-{VERSION}"))
}

/// What AIMock needs, named once so every failing test says the same thing.
const PREREQUISITES: &str = "the AIMock conformance tests need Node.js >= 20.15 and npm on PATH, \
     and the npm registry reachable on first use (Debian/Ubuntu: `apt-get install nodejs npm`; \
     elsewhere: https://nodejs.org)";

/// Checks that `node` (>= 20.15) and `npm` can be run from the directories of `path` (a
/// `PATH`-style list), naming what to install when they cannot.
pub fn check_prerequisites(path: &std::ffi::OsStr) -> Result<(), String> {
    let run = |program: &str| -> Result<String, String> {
        let found = std::env::split_paths(path)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
            .ok_or_else(|| format!("`{program}` was not found: {PREREQUISITES}"))?;
        let output = Command::new(&found)
            .arg("--version")
            .env("PATH", path)
            .output()
            .map_err(|error| {
                format!(
                    "`{}` could not run ({error}): {PREREQUISITES}",
                    found.display()
                )
            })?;
        if !output.status.success() {
            return Err(format!(
                "`{program} --version` failed ({}): {PREREQUISITES}",
                output.status
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let node = run("node")?;
    let version: Vec<u32> = node
        .trim_start_matches('v')
        .split('.')
        .map_while(|part| part.parse().ok())
        .collect();
    if version.len() < 2 || (version[0], version[1]) < (20, 15) {
        return Err(format!(
            "node reports version `{node}`, too old: {PREREQUISITES}"
        ));
    }
    run("npm")?;
    Ok(())
}

/// Installs AIMock once (concurrent tests wait for the first); a missing prerequisite fails the
/// calling test with one message naming what to install.
fn ensure_installed() -> PathBuf {
    static INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);
    let mut slot = INSTALL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let result = slot.get_or_insert_with(install).clone();
    match result {
        Ok(cli) => cli,
        Err(message) => panic!("{message}"),
    }
}

fn install() -> Result<PathBuf, String> {
    check_prerequisites(&std::env::var_os("PATH").unwrap_or_default())?;
    let dir = install_dir();
    let cli = dir.join("node_modules/@copilotkit/aimock/dist/cli.js");
    if !cli.exists() {
        std::fs::create_dir_all(&dir)
            .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
        let status = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--prefix",
            ])
            .arg(&dir)
            .arg(format!("@copilotkit/aimock@{VERSION}"))
            .stdout(Stdio::null())
            .status()
            .map_err(|error| format!("npm could not run ({error}): {PREREQUISITES}"))?;
        if !status.success() {
            return Err(format!(
                "npm install @copilotkit/aimock@{VERSION} failed ({status}): {PREREQUISITES}"
            ));
        }
    }
    if !cli.exists() {
        return Err(format!("AIMock's CLI is missing at {}", cli.display()));
    }
    Ok(cli)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Aimock {
    /// Starts AIMock with the fixtures beside this file and waits until it answers `/health`.
    pub fn start() -> Aimock {
        let cli = ensure_installed();
        let fixtures =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/providers/aimock/fixtures.json");
        for _ in 0..3 {
            let port = free_port();
            let child = Command::new("node")
                .arg(&cli)
                .args([
                    "--host",
                    "127.0.0.1",
                    "--port",
                    &port.to_string(),
                    "--log-level",
                    "warn",
                    "--fixtures",
                ])
                .arg(&fixtures)
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start AIMock with node");
            let mut server = Aimock {
                url: format!("http://127.0.0.1:{port}"),
                child,
            };
            if server.wait_ready(Duration::from_secs(20)) {
                return server;
            }
        }
        panic!("AIMock did not start");
    }

    /// Polls `/health` until it answers, or the process exits, or `limit` passes.
    fn wait_ready(&mut self, limit: Duration) -> bool {
        let started = Instant::now();
        let address = self.url.trim_start_matches("http://").to_owned();
        while started.elapsed() < limit {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if let Ok(mut stream) = std::net::TcpStream::connect(&address) {
                use std::io::{Read, Write};
                let request =
                    format!("GET /health HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\n\r\n");
                let mut reply = String::new();
                if stream.write_all(request.as_bytes()).is_ok()
                    && stream.read_to_string(&mut reply).is_ok()
                    && reply.starts_with("HTTP/1.1 200")
                {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// The paths of the requests AIMock received, in order (from its journal).
    pub fn journal_paths(&self) -> Vec<String> {
        let address = self.url.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(address).expect("connect to AIMock");
        use std::io::{Read, Write};
        let request = format!(
            "GET /__aimock/journal?limit=1000 HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\n\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .expect("ask for the journal");
        let mut reply = String::new();
        stream.read_to_string(&mut reply).expect("read the journal");
        let body_start = reply.find("\r\n\r\n").map(|i| i + 4).unwrap_or(reply.len());
        let body = dechunk(
            &reply[body_start..],
            reply[..body_start]
                .to_ascii_lowercase()
                .contains("transfer-encoding: chunked"),
        );
        let entries: serde_json::Value = serde_json::from_str(&body).expect("the journal is JSON");
        let mut paths: Vec<(u64, String)> = entries
            .as_array()
            .map(|entries| {
                entries
                    .iter()
                    .filter_map(|e| {
                        Some((e["timestamp"].as_u64()?, e["path"].as_str()?.to_owned()))
                    })
                    .filter(|(_, path)| !path.starts_with("/__aimock") && path != "/health")
                    .collect()
            })
            .unwrap_or_default();
        paths.sort();
        paths.into_iter().map(|(_, path)| path).collect()
    }
}

fn dechunk(body: &str, chunked: bool) -> String {
    if !chunked {
        return body.to_owned();
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}
