//! A throwaway PostgreSQL cluster, started once per test binary: `initdb` in a temporary folder
//! (password authentication, user [`USER`]), `pg_ctl start` on a free port of 127.0.0.1 with
//! its socket in that folder, and a watchdog process that stops the server by its process id
//! and removes the folder as soon as the test binary exits, however it exits (a panic, a
//! SIGKILL): the watchdog waits for the end of a pipe only the test binary holds. No test
//! depends on a server started by hand. The binaries are found with `pg_config --bindir`, else
//! in the newest `/usr/lib/postgresql/*/bin`, else on `PATH`; as root, the server runs as user
//! `postgres` (PostgreSQL refuses to run as root).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// The cluster's superuser.
pub const USER: &str = "agent";
/// Its password (the tests check that no error prints it).
pub const PASSWORD: &str = "pg-secret-4711";

/// A running cluster.
pub struct Cluster {
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
    /// The postmaster's process id.
    pub pid: u32,
    /// The temporary folder: data, socket and log.
    pub dir: PathBuf,
    /// The pipe whose end (when this process exits) tells the watchdog to stop the server.
    _watchdog: Mutex<ChildStdin>,
}

/// The cluster of this test binary, started on first use. Panics, with the server's log, when
/// it cannot start.
pub fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
    match CLUSTER.get_or_init(start) {
        Ok(cluster) => cluster,
        Err(why) => panic!("cannot start the test PostgreSQL cluster: {why}"),
    }
}

impl Cluster {
    /// The URL of `database` on this cluster, with the password.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{database}",
            self.port
        )
    }

    /// A new, empty database named after `name` (made unique), and its URL.
    pub async fn database(&self, name: &str) -> String {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let clean: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(40)
            .collect();
        let database = format!("t{n}_{clean}").to_lowercase();
        self.sql("postgres", &format!("CREATE DATABASE {database}"))
            .await;
        self.url(&database)
    }

    /// Runs `sql` on `database` over a connection of its own.
    pub async fn sql(&self, database: &str, sql: &str) {
        let client = self.client(database).await;
        if let Err(error) = client.batch_execute(sql).await {
            panic!("{sql}: {error}");
        }
    }

    /// A plain client on `database` (its connection runs on the current runtime).
    pub async fn client(&self, database: &str) -> tokio_postgres::Client {
        let (client, connection) =
            tokio_postgres::connect(&self.url(database), tokio_postgres::NoTls)
                .await
                .unwrap_or_else(|error| panic!("connect to {database}: {error}"));
        tokio::spawn(connection);
        client
    }
}

/// The folder of the PostgreSQL server binaries.
fn bin_dir() -> Option<PathBuf> {
    let has_initdb = |dir: &Path| dir.join("initdb").is_file().then(|| dir.to_path_buf());
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
        && let Some(dir) = has_initdb(Path::new(String::from_utf8_lossy(&out.stdout).trim()))
    {
        return Some(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, has_initdb(&entry.path().join("bin"))?))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, dir)| dir)
}

/// Whether this process runs as root (PostgreSQL refuses to).
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0)
}

/// `program` (from `bin`, else on `PATH`) as a command run by `runner` (the unprivileged
/// user, when this process is root).
fn command(bin: &Option<PathBuf>, program: &str, runner: Option<&str>) -> Command {
    let program = match bin {
        Some(dir) => dir.join(program).into_os_string(),
        None => program.into(),
    };
    match runner {
        Some(user) => {
            let mut command = Command::new("runuser");
            command.args(["-u", user, "--"]).arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// Runs `command`, and says what went wrong when it fails.
fn run(mut command: Command) -> Result<(), String> {
    let out = command.stdin(Stdio::null()).output().map_err(|e| {
        format!("{command:?}: {e} (is PostgreSQL installed? apt-get install postgresql)")
    })?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{command:?} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// A port of 127.0.0.1 that was free a moment ago.
fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|addr| addr.port())
        .map_err(|e| e.to_string())
}

/// Makes `path` the unprivileged user's (when this process is root).
fn give(path: &Path, runner: Option<&str>) -> Result<(), String> {
    let Some(user) = runner else { return Ok(()) };
    run({
        let mut chown = Command::new("chown");
        chown.arg("-R").arg(format!("{user}:")).arg(path);
        chown
    })
}

fn start() -> Result<Cluster, String> {
    let bin = bin_dir();
    let runner = is_root().then(|| {
        let has_postgres = Command::new("id")
            .args(["-u", "postgres"])
            .output()
            .is_ok_and(|out| out.status.success());
        if has_postgres { "postgres" } else { "nobody" }
    });
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("agent-pg-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pwfile = dir.join("pwfile");
    std::fs::write(&pwfile, PASSWORD).map_err(|e| e.to_string())?;
    give(&dir, runner)?;
    let data = dir.join("data");
    let mut initdb = command(&bin, "initdb", runner);
    initdb
        .arg("-D")
        .arg(&data)
        .args([
            "-U",
            USER,
            "--auth=scram-sha-256",
            "--no-sync",
            "-E",
            "UTF8",
        ])
        .args(["--no-locale"])
        .arg(format!("--pwfile={}", pwfile.display()));
    run(initdb)?;
    let log = dir.join("server.log");
    let mut last = String::new();
    for _ in 0..3 {
        let port = free_port()?;
        let mut pg_ctl = command(&bin, "pg_ctl", runner);
        pg_ctl
            .arg("start")
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(&log)
            .args(["-w", "-t", "60", "-o"])
            .arg(format!(
                "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
                 -c synchronous_commit=off -c full_page_writes=off -c max_connections=300",
                dir.display()
            ));
        match run(pg_ctl) {
            Ok(()) => {
                let pid = std::fs::read_to_string(data.join("postmaster.pid"))
                    .ok()
                    .and_then(|text| text.lines().next()?.trim().parse().ok())
                    .ok_or("no process id in postmaster.pid")?;
                let watchdog = watchdog(pid, &dir)?;
                return Ok(Cluster {
                    port,
                    pid,
                    dir,
                    _watchdog: Mutex::new(watchdog),
                });
            }
            Err(why) => {
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                last = format!("{why}\n{log}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Err(last)
}

/// A process that waits for its standard input to end (this process holds the only writer,
/// which the kernel closes when this process exits, however it exits), then stops the server
/// (fast shutdown, by process id), waits for it and removes `dir`. It ignores the signals a
/// terminal sends the whole process group, so a Ctrl-C reaches it only as the end of its input.
fn watchdog(pid: u32, dir: &Path) -> Result<ChildStdin, String> {
    let script = r#"trap '' INT TERM HUP
read _
kill -INT "$1" 2>/dev/null
while kill -0 "$1" 2>/dev/null; do sleep 0.05; done
rm -rf "$2""#;
    let mut child = Command::new("sh")
        .args(["-c", script, "watchdog"])
        .arg(pid.to_string())
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("start the watchdog: {e}"))?;
    // Nothing is ever written to it: a line would stop the server early.
    child
        .stdin
        .take()
        .ok_or_else(|| "the watchdog's stdin".to_owned())
}
