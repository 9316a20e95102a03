//! A PostgreSQL [`SessionStore`] for `agent-core`: many processes, on one machine or many,
//! serving shared sessions.
//!
//! [`PostgresStore::connect`] opens a small connection pool on a `postgres://` URL, brings the
//! schema up to date (versioned migrations, run by one process at a time; a schema written by a
//! newer build is refused) and serves the same rows as `SqliteStore` (docs/design.md §7). Turns
//! of one session never overlap, whichever process runs them: a turn holds a lease row that it
//! renews while it runs, so a process that dies mid-turn holds its sessions for at most one
//! lease (30 s by default). Every statement is prepared once per connection. Every failure is a
//! [`StoreError`] of a kind to branch on ([`StoreErrorKind::Unreachable`],
//! [`StoreErrorKind::Auth`], [`StoreErrorKind::NewerSchema`], [`StoreErrorKind::Conflict`], ...)
//! whose message names the server as `postgres://user@host:port/database`, never the password.
//!
//! The tool calls a suspended turn leaves waiting (with their answers and execution records)
//! and the tools approved for good are kept with the session too, so any process can answer
//! and resume a turn another one suspended.
//!
//! Not yet: TLS (connections are plain TCP or a Unix socket).
//!
//! ```no_run
//! # async fn demo() -> Result<(), agent_core::StoreError> {
//! use std::sync::Arc;
//! let store = agent_postgres::PostgresStore::connect("postgres://agent:secret@db:5432/agents").await?;
//! let agent = agent_core::AgentBuilder::new("assistant")
//!     .model(agent_core::ScriptedModel::new([agent_core::ScriptedStep::new().text("Hi.")]))
//!     .store(Arc::new(store))
//!     .build();
//! # let _ = agent;
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod holders;
mod lease;
mod row;
mod schema;
mod suspended;
mod wake;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    BoxFuture, MessageColumns, MessageUpdate, NewMessage, SessionStore, StoreError, StoreErrorKind,
    StoredMessage, SuspendedCall, ToolStatus, TurnLease, TurnLocks,
};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

use self::error::Server;

/// The largest pool: PostgreSQL's own ceiling on `max_connections` (the pool sets aside room
/// for each connection up front, and panics on a size it cannot hold, such as `usize::MAX`).
const MOST_CONNECTIONS: usize = 262_143;

/// Options of [`PostgresStore::connect_with`]; the defaults are what [`PostgresStore::connect`]
/// uses.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// The most connections the store's pool opens to the server (default 8; at most
    /// 262,143, the most a PostgreSQL server accepts, and a larger one is taken as that). Each
    /// call holds
    /// one for the length of one statement; a running turn holds none between its calls. Once
    /// a turn of the store has waited for a session, one more connection listens for the
    /// sessions' turns to end.
    pub max_connections: usize,
    /// How long opening a connection may take before the server counts as unreachable
    /// (default 5 s).
    pub connect_timeout: Duration,
    /// How long a call waits for a free connection of the pool when all are busy (default 30 s).
    pub wait_timeout: Duration,
    /// How long a turn's lease on its session lasts unless renewed (default 30 s). A running
    /// turn renews it every third of this; a process that dies mid-turn holds its sessions for
    /// at most this long, then the next turn takes over and repairs what it left. Expiry is
    /// measured by the server's clock, so the processes' clocks need not agree. At most 1,000
    /// years (the server's timestamps end in the year 294276): a longer one, such as
    /// `Duration::MAX`, is taken as that.
    pub turn_lease: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            max_connections: 8,
            connect_timeout: Duration::from_secs(5),
            wait_timeout: Duration::from_secs(30),
            turn_lease: Duration::from_secs(30),
        }
    }
}

impl PostgresOptions {
    /// These options with another pool size (at least 1, at most 262,143; `usize::MAX` is
    /// taken as 262,143).
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// These options with another connect timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// These options with another wait for a free connection.
    pub fn wait_timeout(mut self, timeout: Duration) -> Self {
        self.wait_timeout = timeout;
        self
    }

    /// These options with another turn lease length (at least 3 ms, at most 1,000 years; a
    /// shorter or longer one is taken as that).
    pub fn turn_lease(mut self, length: Duration) -> Self {
        self.turn_lease = length.max(Duration::from_millis(3));
        self
    }
}

/// The longest turn lease, 1,000 years: a longer one would put its expiry past the server's
/// last timestamp ("interval out of range", and no turn could take a session).
const LONGEST_LEASE: Duration = Duration::from_secs(1_000 * 365 * 24 * 60 * 60);

/// Sessions in a PostgreSQL database, shared by every process connected to it (docs/design.md
/// §7). Rows keep their order within a session and survive every process. Clones share one
/// connection pool.
///
/// Turns of one session never overlap, whichever agent, store or process runs them: a turn holds
/// a lease row in the database (see [`PostgresOptions::turn_lease`]).
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    server: Server,
    /// A name no other store has (a UUID from the server): with the process id and a count,
    /// it names each turn's lease holder.
    id: Arc<str>,
    /// The turn locks of this store and its clones, within the process.
    locks: Arc<TurnLocks>,
    /// How long a turn's lease lasts unless renewed.
    lease: Duration,
    /// Wakes this store's turns waiting for a session when another turn gives it back.
    wakeups: Arc<wake::Wakeups>,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("server", &self.server.to_string())
            .field("max_connections", &self.pool.status().max_size)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// The schema version this build writes (the `version` in table `agent_schema`): the number
    /// of migration steps. A database with a higher version is refused.
    pub const SCHEMA_VERSION: i64 = schema::LATEST_VERSION;

    /// Connects to the database at `url` (`postgres://user:password@host:port/database`, or
    /// the `key=value` form) with the default [`PostgresOptions`], creating the schema if
    /// needed and migrating an older one. An unreachable server, refused credentials, a schema
    /// written by a newer version, another program's tables (or an `agent_schema` whose
    /// version lacks its tables, left untouched) and a user or database that may not write
    /// the tables are errors naming the server (never the password).
    pub async fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        PostgresStore::connect_with(url, PostgresOptions::default()).await
    }

    /// Connects to the database at `url` with `options` (see [`PostgresStore::connect`]).
    pub async fn connect_with(
        url: &str,
        options: PostgresOptions,
    ) -> Result<PostgresStore, StoreError> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| error::bad_url(&e))?;
        config.connect_timeout(options.connect_timeout);
        if config.get_application_name().is_none() {
            config.application_name("agent-postgres");
        }
        let server = Server::named(&config);
        let wakeups = Arc::new(wake::Wakeups::new(config.clone(), server.clone()));
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.max_connections.clamp(1, MOST_CONNECTIONS))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(options.wait_timeout))
            .create_timeout(Some(options.connect_timeout))
            .build()
            .map_err(|e| server.at(format_args!("cannot build the connection pool: {e}")))?;
        let mut conn = pool.get().await.map_err(|e| server.pool(&e))?;
        schema::migrate(&mut conn)
            .await
            .map_err(|e| server.migrate(&e))?;
        schema::check_writable(&**conn)
            .await
            .map_err(|e| server.migrate(&e))?;
        let id: String = conn
            .query_one("SELECT gen_random_uuid()::text", &[])
            .await
            .and_then(|row| row.try_get(0))
            .map_err(|e| server.postgres(&e))?;
        drop(conn);
        holders::store_made(&id);
        Ok(PostgresStore {
            pool,
            server,
            id: id.into(),
            locks: Arc::default(),
            lease: options
                .turn_lease
                .clamp(Duration::from_millis(3), LONGEST_LEASE),
            wakeups,
        })
    }

    /// The server as errors name it: `postgres://user@host:port/database`, without the
    /// password.
    pub fn server(&self) -> String {
        self.server.to_string()
    }

    /// A connection of the pool.
    async fn conn(&self) -> Result<Object, StoreError> {
        self.pool.get().await.map_err(|e| self.server.pool(&e))
    }

    /// The error of a call that failed on `conn`. A connection that failed as unreachable
    /// (closed, or ended by the server: a restart, `pg_terminate_backend`) leaves the pool
    /// here, so the next call opens a fresh one; returned to the pool, it could fail one more
    /// call before its closing is noticed.
    pub(crate) fn failed(&self, conn: Object, error: &tokio_postgres::Error) -> StoreError {
        let error = self.server.postgres(error);
        if error.kind() == StoreErrorKind::Unreachable {
            drop(Object::take(conn));
        }
        error
    }

    /// Runs one prepared statement and returns how many rows it changed.
    async fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, StoreError> {
        let conn = self.conn().await?;
        let executed = async {
            let statement = conn.prepare_cached(sql).await?;
            conn.execute(&statement, params).await
        }
        .await;
        executed.map_err(|e| self.failed(conn, &e))
    }

    /// Runs one prepared statement and returns its rows.
    async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        let conn = self.conn().await?;
        let queried = async {
            let statement = conn.prepare_cached(sql).await?;
            conn.query(&statement, params).await
        }
        .await;
        queried.map_err(|e| self.failed(conn, &e))
    }

    async fn load_rows(&self, session: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.query(row::SELECT_SESSION, &[&session])
            .await?
            .iter()
            .map(|found| row::stored(found).map_err(|e| self.server.row(&e)))
            .collect()
    }

    async fn insert_row(
        &self,
        session: &str,
        new: NewMessage,
    ) -> Result<StoredMessage, StoreError> {
        let c = MessageColumns::of(&new.message).map_err(|e| {
            self.server
                .at(format_args!("cannot encode tool calls: {e}"))
        })?;
        let status = new.status.as_str();
        let found = self
            .query(
                row::INSERT,
                &[
                    &session,
                    &c.role,
                    &c.content,
                    &c.tool_calls,
                    &c.tool_call_id,
                    &c.name,
                    &c.reasoning,
                    &c.reasoning_signature,
                    &c.tool_status,
                    &new.request_sent_at,
                    &status,
                    &new.silent,
                    &c.provider_blocks,
                ],
            )
            .await?;
        let (id, created_at) = found
            .first()
            .map(|found| (found.try_get(0), found.try_get(1)))
            .ok_or_else(|| self.server.at("the insert returned no row"))?;
        Ok(StoredMessage {
            id: id.map_err(|e| self.server.postgres(&e))?,
            session_id: session.into(),
            tool_status: ToolStatus::of(&new.message),
            message: new.message,
            created_at: created_at.map_err(|e| self.server.postgres(&e))?,
            request_sent_at: new.request_sent_at,
            response_completed_at: None,
            status: new.status,
            silent: new.silent,
        })
    }

    async fn update_row(
        &self,
        session: &str,
        id: i64,
        update: MessageUpdate,
    ) -> Result<(), StoreError> {
        let status = update.status.map(|status| status.as_str());
        let completed = update.response_completed_at;
        let silent = update.silent;
        let changed = match &update.message {
            Some(message) => {
                let c = MessageColumns::of(message).map_err(|e| {
                    self.server
                        .at(format_args!("cannot encode tool calls: {e}"))
                })?;
                self.execute(
                    row::UPDATE_MESSAGE,
                    &[
                        &id,
                        &session,
                        &c.role,
                        &c.content,
                        &c.tool_calls,
                        &c.tool_call_id,
                        &c.name,
                        &c.reasoning,
                        &c.reasoning_signature,
                        &c.tool_status,
                        &status,
                        &completed,
                        &silent,
                        &c.provider_blocks,
                    ],
                )
                .await?
            }
            None => {
                self.execute(
                    row::UPDATE_STATE,
                    &[&id, &session, &status, &completed, &silent],
                )
                .await?
            }
        };
        self.found(changed, session, id)
    }

    /// `Ok` when a statement changed the row, else the error that row `id` is not in `session`.
    fn found(&self, changed: u64, session: &str, id: i64) -> Result<(), StoreError> {
        if changed == 0 {
            return Err(self.server.of(
                StoreErrorKind::NotFound,
                format_args!("no message {id} in session `{session}`"),
            ));
        }
        Ok(())
    }
}

impl SessionStore for PostgresStore {
    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        Box::pin(self.load_rows(session))
    }

    fn has_rows<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let found = self.query(row::HAS_ROWS, &[&session]).await?;
            let has = found.first().map(|found| found.try_get(0));
            let has = has.unwrap_or(Ok(false));
            has.map_err(|e| {
                self.server
                    .at(format_args!("cannot read whether a session has rows: {e}"))
            })
        })
    }

    fn insert<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        Box::pin(self.insert_row(session, row))
    }

    fn update<'a>(
        &'a self,
        session: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.update_row(session, id, update))
    }

    fn delete<'a>(&'a self, session: &'a str, id: i64) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let changed = self.execute(row::DELETE, &[&id, &session]).await?;
            self.found(changed, session, id)
        })
    }

    fn lock_turn<'a>(
        &'a self,
        session: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<TurnLease>, StoreError>> {
        Box::pin(lease::take(self, session, wait))
    }

    fn suspended<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SuspendedCall>, StoreError>> {
        Box::pin(suspended::load_calls(self, session))
    }

    fn set_suspended<'a>(
        &'a self,
        session: &'a str,
        calls: Vec<SuspendedCall>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { suspended::store_calls(self, session, &calls).await })
    }

    fn approved_tools<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(suspended::load_tools(self, session))
    }

    fn set_approved_tools<'a>(
        &'a self,
        session: &'a str,
        tools: Vec<String>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { suspended::store_tools(self, session, &tools).await })
    }
}
