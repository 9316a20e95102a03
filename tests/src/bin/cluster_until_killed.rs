//! A process that starts the test PostgreSQL cluster (`tests::postgres`) and waits, for the test
//! that kills it with SIGKILL and checks the cluster goes with it. It prints the postmaster's
//! process id and the cluster's folder, on one line, once the server runs.

use std::io::Write;

fn main() {
    let cluster = tests::postgres::cluster();
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "{} {}", cluster.pid, cluster.dir.display());
    let _ = stdout.flush();
    std::thread::sleep(std::time::Duration::from_secs(3600));
}
