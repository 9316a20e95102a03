//! The in-memory store holds a session only while a handle on it lives: one-shot runs leave
//! nothing behind, and a conversation's rows go when its last handle (or running turn) does.
//! It lends a turn the session's history and takes it back at the turn's end.

use std::sync::{Arc, Mutex};

use agent_core::{
    Agent, AgentBuilder, BoxFuture, Hook, MemoryStore, Message, MessageStatus, MessageUpdate,
    Model, ModelRequest, ModelStream, NewMessage, ScriptedModel, ScriptedStep, SessionStore,
    StoreError, StoredMessage, TurnConfig, TurnEvent, TurnLease, event,
};
use tests::Add;

/// An agent on `store` whose model answers every turn with one tool call and then text.
fn agent(store: &Arc<MemoryStore>, turns: usize) -> Agent {
    let steps = (0..turns).flat_map(|_| {
        [
            ScriptedStep::new().tool_call("c1", "add", r#"{"a":1,"b":2}"#),
            ScriptedStep::new().text("3"),
        ]
    });
    AgentBuilder::new("memory")
        .model(ScriptedModel::new(steps))
        .tool(Add::default())
        .store(store.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn ten_thousand_one_shot_runs_leave_no_session_behind() {
    let store = Arc::new(MemoryStore::new());
    let agent = agent(&store, 10_000);
    for _ in 0..10_000 {
        let result = agent.run("1+2?").await;
        assert_eq!(result.text, "3");
        assert_eq!(result.messages.len(), 3);
    }
    assert_eq!(store.session_count(), 0);
}

#[tokio::test]
async fn a_conversation_keeps_its_rows_while_a_handle_lives_and_frees_them_after() {
    let store = Arc::new(MemoryStore::new());
    let agent = agent(&store, 3);
    let conversation = agent.session("kept");
    conversation.run("1+2?").await;
    assert_eq!(store.session_count(), 1);

    // A second handle and a clone share the session; dropping them keeps it for the first.
    let other = agent.session("kept");
    let clone = other.clone();
    drop(other);
    drop(clone);
    assert_eq!(conversation.rows().await.unwrap().len(), 4);

    // A streamed turn holds its own handle: the rows outlive the dropped conversation until
    // the turn ends.
    let mut stream = conversation.stream("again");
    drop(conversation);
    let mut finished = None;
    while let Some(event) = stream.next().await {
        if let TurnEvent::Finished(result) = event {
            finished = Some(result);
        }
    }
    let finished = finished.expect("the turn finishes");
    assert_eq!(finished.text, "3");
    assert_eq!(store.session_count(), 0);

    // Reopened after every handle went, the session starts empty.
    let reopened = agent.session("kept");
    assert!(reopened.rows().await.unwrap().is_empty());
}

/// A scripted model that keeps a copy of each request's messages, not the turn's own history:
/// as a provider does, which writes the request out and lets it go.
struct Forgetful(Arc<ScriptedModel>);

impl Model for Forgetful {
    fn id(&self) -> &str {
        self.0.id()
    }

    fn stream(&self, mut request: ModelRequest) -> ModelStream {
        request.messages = Arc::new(request.messages.to_vec());
        self.0.stream(request)
    }
}

/// A memory store that records the histories turns give back.
#[derive(Default)]
struct Lending {
    inner: MemoryStore,
    given: Mutex<Vec<Vec<Message>>>,
}

impl SessionStore for Lending {
    fn load<'a>(&'a self, s: &'a str) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        self.inner.load(s)
    }

    fn load_history<'a>(
        &'a self,
        s: &'a str,
        capacity: &'a (dyn Fn(usize) -> usize + Sync),
    ) -> BoxFuture<'a, Result<Option<Vec<Message>>, StoreError>> {
        self.inner.load_history(s, capacity)
    }

    fn keep_history(&self, s: &str, messages: Vec<Message>) {
        self.given.lock().unwrap().push(messages.clone());
        self.inner.keep_history(s, messages);
    }

    /// Every history is offered, to be recorded (the store keeps only long ones).
    fn keeps_history(&self, _: usize) -> bool {
        true
    }

    fn insert<'a>(
        &'a self,
        s: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        self.inner.insert(s, row)
    }

    fn update<'a>(
        &'a self,
        s: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.update(s, id, update)
    }

    fn delete<'a>(&'a self, s: &'a str, id: i64) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.delete(s, id)
    }

    fn lock_turn<'a>(
        &'a self,
        s: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<TurnLease>, StoreError>> {
        self.inner.lock_turn(s, wait)
    }
}

/// The messages a model reads of `rows`.
fn visible(rows: Vec<StoredMessage>) -> Vec<Message> {
    let read = rows
        .into_iter()
        .filter(|row| row.status == MessageStatus::Completed && !row.silent);
    read.map(|row| row.message).collect()
}

/// Three turns with a tool call each on `store`, the model (`forgetful` or not) answering
/// `1+2?`; with `rewrite`, a before_turn hook replaces each turn's history.
async fn three_turns(store: &Arc<Lending>, forgetful: bool, rewrite: bool) -> Arc<ScriptedModel> {
    let steps = (0..3).flat_map(|_| {
        [
            ScriptedStep::new().tool_call("c1", "add", r#"{"a":1,"b":2}"#),
            ScriptedStep::new().text("3"),
        ]
    });
    let scripted = Arc::new(ScriptedModel::new(steps));
    let model: Arc<dyn Model> = if forgetful {
        Arc::new(Forgetful(scripted.clone()))
    } else {
        scripted.clone()
    };
    let mut builder = AgentBuilder::new("lending")
        .model_arc(model)
        .tool(Add::default())
        .store(store.clone());
    if rewrite {
        builder = builder.hook(Hook::<event::BeforeTurn>::sync("rewrite", |_| {
            let mut config = TurnConfig::default();
            config.messages = Some(vec![Message::user("1+2?")]);
            config
        }));
    }
    let conversation = builder.build().unwrap().session("s");
    for _ in 0..3 {
        assert_eq!(conversation.run("1+2?").await.text, "3");
    }
    scripted
}

/// Each turn borrows the session's history from the store and gives it back at its end with
/// its own messages after it: what the rows show, and what the next turn's model reads.
#[tokio::test]
async fn each_turn_gives_the_history_it_borrowed_back() {
    let store = Arc::new(Lending::default());
    let model = three_turns(&store, true, false).await;
    let given = store.given.lock().unwrap().clone();
    assert_eq!(given.len(), 3);
    let rows = store.load("s").await.unwrap();
    assert_eq!(rows.len(), 12);
    let history = visible(rows);
    assert_eq!(given[2], history);
    // Each turn added its four messages (the input, the call, its result, the answer).
    assert_eq!(given[0], history[..4]);
    assert_eq!(given[1], history[..8]);
    // The last request read the history lent to the third turn, with its input and call.
    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    assert_eq!(*requests[5].messages, history[..11]);
}

/// A history the turn replaced (before_turn) is not given back; one the turn copied because a
/// model kept its request (the history it pushes onto is then its own copy) is, and is what the
/// rows show. The next turns read the rows' history either way.
#[tokio::test]
async fn a_history_replaced_is_not_given_back_and_a_copied_one_is() {
    let store = Arc::new(Lending::default());
    three_turns(&store, true, true).await;
    assert!(store.given.lock().unwrap().is_empty());

    let store = Arc::new(Lending::default());
    let model = three_turns(&store, false, false).await;
    let history = visible(store.load("s").await.unwrap());
    let given = store.given.lock().unwrap().clone();
    assert_eq!(given.len(), 3);
    assert_eq!(given[2], history);
    assert_eq!(*model.requests()[5].messages, history[..11]);
}

/// A model whose stream never answers: a turn on it waits until it is dropped.
struct Silent;

impl Model for Silent {
    fn id(&self) -> &str {
        "silent"
    }

    fn stream(&self, _: ModelRequest) -> ModelStream {
        Box::pin(Never)
    }
}

/// A stream that never yields.
struct Never;

impl futures_core::Stream for Never {
    type Item = Result<agent_core::ModelEvent, agent_core::ModelError>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        std::task::Poll::Pending
    }
}

/// A turn dropped while it holds a long session's history never gives it back; the next turns
/// still read exactly what the rows show (the loan is refused, then taken anew).
#[tokio::test]
async fn a_turn_dropped_with_the_history_leaves_the_next_ones_reading_the_rows() {
    let store = Arc::new(MemoryStore::new());
    for i in 0..70 {
        let row = NewMessage::completed(Message::user(format!("m{i}")));
        store.insert("s", row).await.unwrap();
    }
    let steps = (0..4).map(|i| ScriptedStep::new().text(format!("answer {i}")));
    let scripted = Arc::new(ScriptedModel::new(steps));
    let agent = AgentBuilder::new("answers")
        .model_arc(Arc::new(Forgetful(scripted.clone())))
        .store(store.clone())
        .build()
        .unwrap();
    // Held throughout, so the session outlives the dropped turn's handle.
    let conversation = agent.session("s");
    let silent = AgentBuilder::new("silent")
        .model(Silent)
        .store(store.clone())
        .build()
        .unwrap();
    let dropped = silent.session("s");
    let waited = tokio::time::timeout(std::time::Duration::from_millis(50), dropped.run("lost"));
    assert!(waited.await.is_err(), "the silent model never answers");
    drop(dropped);

    // The first repairs the dropped turn's rows, the second finds the loan out and copies, the
    // third lends and takes back, the fourth reads what was taken back.
    for i in 0..4 {
        let input = format!("question {i}");
        assert_eq!(
            conversation.run(input.as_str()).await.text,
            format!("answer {i}")
        );
        let rows = visible(store.load("s").await.unwrap());
        let sent = &scripted.requests()[i];
        // The request held every message the rows show up to the answer it asked for.
        assert_eq!(*sent.messages, rows[..rows.len() - 1]);
    }
}
