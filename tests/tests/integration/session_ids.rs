//! A new conversation's session id is unique across processes, not only within one: two
//! processes on one store (a SQLite file, a PostgreSQL database) that start a conversation in
//! the same microsecond must not share its session.

use agent_core::{AgentBuilder, ScriptedModel};

/// Set in the child processes this test starts: they print their first session id.
const CHILD: &str = "AGENT_SESSION_IDS_CHILD";

/// In a child process, prints the first session id it makes; elsewhere, does nothing.
#[test]
fn child_prints_its_first_session_id() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let agent = AgentBuilder::new("fresh")
        .model(ScriptedModel::new([]))
        .build()
        .unwrap();
    println!("session id: {}", agent.conversation().session_id());
}

/// The first session id of a fresh process, without its time (the part after the prefix and
/// the microseconds): what tells two processes' ids apart when they share a microsecond.
fn first_id_without_time() -> String {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "session_ids::child_prints_its_first_session_id",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let id = stdout
        .lines()
        .find_map(|line| Some(line.split_once("session id: ")?.1))
        .unwrap_or_else(|| panic!("the child printed no id: {stdout}"));
    let parts: Vec<&str> = id.split('_').collect();
    assert_eq!(parts.len(), 3, "{id}");
    assert_eq!(parts[0], "session", "{id}");
    parts[2].to_owned()
}

#[test]
fn two_fresh_processes_make_different_session_ids_at_the_same_time() {
    let (first, second) = (first_id_without_time(), first_id_without_time());
    assert_ne!(first, second, "both processes count their ids alike");
}
