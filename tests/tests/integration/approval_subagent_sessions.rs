//! The session of a subagent's suspended turn, in a store that frees sessions (the in-memory
//! one): kept while the caller's session can resume it, freed once it resumed or the caller's
//! session is freed.

use std::sync::Arc;

use agent_core::{MemoryStore, ScriptedModel, ScriptedStep, SessionStore, TurnStatus};
use tests::Trace;

use super::approval::{boss, worker};

/// A boss on `boss_store` asking a worker on `worker_store`, whose `delete` call waits for
/// approval; the worker then answers, and so does the boss.
fn agents(
    trace: &Trace,
    boss_store: &Arc<MemoryStore>,
    worker_store: &Arc<MemoryStore>,
) -> agent_core::Agent {
    let worker_model = ScriptedModel::new([
        ScriptedStep::new().tool_call("w1", "delete", r#"{"path":"x"}"#),
        ScriptedStep::new().text("Deleted x."),
    ]);
    let boss_model = ScriptedModel::new([
        ScriptedStep::new().tool_call("s1", "worker", r#"{"input":"delete x"}"#),
        ScriptedStep::new().text("The worker deleted x."),
    ]);
    let worker = worker(&worker_model, trace, worker_store.clone());
    boss(&boss_model, &worker, trace, boss_store.clone())
}

#[tokio::test]
async fn agent_run_frees_the_session_of_a_subagent_that_suspended() {
    let trace = Trace::new();
    let (boss_store, worker_store) = (Arc::new(MemoryStore::new()), Arc::new(MemoryStore::new()));
    let boss = agents(&trace, &boss_store, &worker_store);

    let result = boss.run("Have x deleted").await;

    assert_eq!(result.status, TurnStatus::Suspended, "{result:?}");
    assert_eq!(boss_store.session_count(), 0, "the run's session is freed");
    assert_eq!(
        worker_store.session_count(),
        0,
        "nothing can resume the worker's turn once the run's session is gone"
    );
}

#[tokio::test]
async fn the_subagent_s_session_is_kept_while_the_caller_s_can_resume_it_then_freed() {
    let trace = Trace::new();
    let (boss_store, worker_store) = (Arc::new(MemoryStore::new()), Arc::new(MemoryStore::new()));
    let boss = agents(&trace, &boss_store, &worker_store);
    let conversation = boss.conversation();

    let suspended = conversation.run("Have x deleted").await;
    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    let waiting = conversation.waiting_calls().await.expect("waiting");
    let worker_session = waiting[0]
        .via
        .as_ref()
        .expect("in the worker")
        .session
        .clone();
    assert_eq!(worker_store.session_count(), 1, "kept for the resume");
    assert_eq!(
        worker_store
            .suspended(&worker_session)
            .await
            .expect("kept")
            .len(),
        1
    );

    assert_eq!(conversation.approve("w1").await, Ok(0));
    let resumed = conversation.resume().await.expect("resumes");

    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(resumed.text, "The worker deleted x.");
    assert_eq!(worker_store.session_count(), 0, "freed once its turn ended");
    assert_eq!(
        boss_store.session_count(),
        1,
        "the conversation still holds it"
    );
    drop(conversation);
    assert_eq!(boss_store.session_count(), 0);
}

#[tokio::test]
async fn dropping_a_suspended_conversation_frees_its_subagent_s_session() {
    let trace = Trace::new();
    let (boss_store, worker_store) = (Arc::new(MemoryStore::new()), Arc::new(MemoryStore::new()));
    let boss = agents(&trace, &boss_store, &worker_store);
    let conversation = boss.conversation();
    let copy = conversation.clone();

    let suspended = conversation.run("Have x deleted").await;
    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    drop(conversation);
    assert_eq!(
        (boss_store.session_count(), worker_store.session_count()),
        (1, 1),
        "a handle on the caller's session still holds both"
    );
    drop(copy);
    assert_eq!(
        (boss_store.session_count(), worker_store.session_count()),
        (0, 0)
    );
}

#[tokio::test]
async fn sessions_two_subagents_deep_are_freed_with_the_run() {
    let trace = Trace::new();
    let stores: Vec<Arc<MemoryStore>> = (0..3).map(|_| Arc::new(MemoryStore::new())).collect();
    let worker_model =
        ScriptedModel::new([ScriptedStep::new().tool_call("w1", "delete", r#"{"path":"x"}"#)]);
    let lead_model = ScriptedModel::new([ScriptedStep::new().tool_call(
        "l1",
        "worker",
        r#"{"input":"delete x"}"#,
    )]);
    let boss_model = ScriptedModel::new([ScriptedStep::new().tool_call(
        "b1",
        "boss",
        r#"{"input":"have x deleted"}"#,
    )]);
    let worker = worker(&worker_model, &trace, stores[2].clone());
    let lead = boss(&lead_model, &worker, &trace, stores[1].clone());
    let top = agent_core::AgentBuilder::new("top")
        .model(boss_model)
        .subagent(&lead)
        .store(stores[0].clone() as Arc<dyn SessionStore>)
        .build()
        .expect("builds");
    let conversation = top.conversation();

    let result = conversation.run("Go").await;

    assert_eq!(result.status, TurnStatus::Suspended, "{result:?}");
    assert_eq!(result.pending[0].path, ["boss", "worker"]);
    let counts = || stores.iter().map(|s| s.session_count()).collect::<Vec<_>>();
    assert_eq!(counts(), [1, 1, 1], "each level kept for the resume");
    drop(conversation);
    assert_eq!(counts(), [0, 0, 0], "freed level by level");
}

#[tokio::test]
async fn a_subagent_that_suspends_again_on_resume_stays_held_once() {
    let trace = Trace::new();
    let (boss_store, worker_store) = (Arc::new(MemoryStore::new()), Arc::new(MemoryStore::new()));
    let worker_model = ScriptedModel::new([
        ScriptedStep::new().tool_call("w1", "delete", r#"{"path":"x"}"#),
        ScriptedStep::new().tool_call("w2", "delete", r#"{"path":"y"}"#),
        ScriptedStep::new().text("Deleted x and y."),
    ]);
    let boss_model = ScriptedModel::new([
        ScriptedStep::new().tool_call("s1", "worker", r#"{"input":"delete x and y"}"#),
        ScriptedStep::new().text("Both deleted."),
    ]);
    let worker = worker(&worker_model, &trace, worker_store.clone());
    let boss = boss(&boss_model, &worker, &trace, boss_store.clone());
    let conversation = boss.conversation();

    let first = conversation.run("Delete x and y").await;
    assert_eq!(first.status, TurnStatus::Suspended, "{first:?}");
    assert_eq!(conversation.approve("w1").await, Ok(0));
    let second = conversation.resume().await.expect("resumes");
    assert_eq!(second.status, TurnStatus::Suspended, "{second:?}");
    let ids: Vec<&str> = second.pending.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["w2"]);
    assert_eq!(worker_store.session_count(), 1);
    assert_eq!(conversation.approve("w2").await, Ok(0));
    let done = conversation.resume().await.expect("resumes");

    assert_eq!(done.status, TurnStatus::Completed, "{done:?}");
    assert_eq!(done.text, "Both deleted.");
    assert_eq!(worker_store.session_count(), 0);
    drop(conversation);
    assert_eq!(boss_store.session_count(), 0);
}
