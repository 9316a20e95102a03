//! Server failures as [`StoreError`]s that name the server (never the password), say what kind
//! of failure it is and, when they can, what to do.

use std::fmt;

use agent_core::{StoreError, StoreErrorKind};
use deadpool_postgres::{PoolError, TimeoutType};
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;

use crate::row::RowError;
use crate::schema::{LATEST_VERSION, MigrateError};

/// The server a store works on, as every error names it: `postgres://user@host:port/database`.
/// It is built from the parsed URL without its password, so no error can print it.
#[derive(Clone, Debug)]
pub(crate) struct Server(std::sync::Arc<str>);

impl Server {
    /// The server `config` names.
    pub(crate) fn named(config: &tokio_postgres::Config) -> Server {
        let ports = config.get_ports();
        let hosts: Vec<String> = config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(at, host)| {
                let port = ports
                    .get(at)
                    .or_else(|| ports.first())
                    .copied()
                    .unwrap_or(5432);
                match host {
                    Host::Tcp(name) if name.contains(':') => format!("[{name}]:{port}"),
                    Host::Tcp(name) => format!("{name}:{port}"),
                    Host::Unix(dir) => format!("{}:{port}", dir.display()),
                }
            })
            .collect();
        let user = config.get_user().unwrap_or_default();
        let at = if user.is_empty() { "" } else { "@" };
        let database = config.get_dbname().unwrap_or(user);
        Server(format!("postgres://{user}{at}{}/{database}", hosts.join(",")).into())
    }

    /// An error about this server.
    pub(crate) fn at(&self, what: impl fmt::Display) -> StoreError {
        self.of(StoreErrorKind::Other, what)
    }

    /// An error of a kind about this server.
    pub(crate) fn of(&self, kind: StoreErrorKind, what: impl fmt::Display) -> StoreError {
        StoreError::new(kind, format!("session store {}: {what}", self.0))
    }

    /// A failure the client or the server reported.
    pub(crate) fn postgres(&self, error: &tokio_postgres::Error) -> StoreError {
        let (kind, advice) = classify(error);
        self.of(kind, format_args!("{advice} (postgres: {})", brief(error)))
    }

    /// A connection the pool could not give.
    pub(crate) fn pool(&self, error: &PoolError) -> StoreError {
        match error {
            PoolError::Backend(error) => self.postgres(error),
            PoolError::Timeout(TimeoutType::Wait) => self.at(
                "every connection of the pool stayed busy for the whole wait timeout; raise \
                 `PostgresOptions::max_connections` or `wait_timeout`",
            ),
            PoolError::Timeout(_) => self.of(
                StoreErrorKind::Unreachable,
                "cannot reach the server: connecting timed out; is it running, and is the host \
                 and port right?",
            ),
            other => self.at(format_args!("no connection: {other}")),
        }
    }

    /// A schema that could not be brought up to date.
    pub(crate) fn migrate(&self, error: &MigrateError) -> StoreError {
        match error {
            MigrateError::Postgres(error) => self.postgres(error),
            MigrateError::Unsupported(found) if *found > LATEST_VERSION => self.of(
                StoreErrorKind::NewerSchema,
                format_args!(
                    "the database was written by a newer version of agent-postgres (schema \
                     version {found}, this build knows up to {LATEST_VERSION}); upgrade \
                     agent-postgres or choose another database"
                ),
            ),
            MigrateError::Unsupported(found) => self.at(format_args!(
                "unknown schema version {found}: this is not an agent-postgres session store"
            )),
            MigrateError::Step(to, error)
                if error.code().is_some_and(|code| {
                    *code == SqlState::DUPLICATE_TABLE || *code == SqlState::DUPLICATE_OBJECT
                }) =>
            {
                self.at(format_args!(
                    "cannot create the session schema (version {to}): {}; is this another \
                     program's database? choose another database",
                    brief(error)
                ))
            }
            MigrateError::Step(_, error) => self.postgres(error),
            MigrateError::Foreign(found, missing) => self.at(format_args!(
                "not an agent-postgres session store: `agent_schema` records schema version \
                 {found} but there is no {missing}; is this another program's database? choose \
                 another database or schema"
            )),
            MigrateError::ReadOnly(what) => self.of(
                StoreErrorKind::Unwritable,
                format_args!(
                    "the user may not write here: {what}; grant it the privileges, or connect \
                     as a user who has them"
                ),
            ),
        }
    }

    /// A row that could not be read back.
    pub(crate) fn row(&self, error: &RowError) -> StoreError {
        match error {
            RowError::Postgres(error) => self.postgres(error),
            RowError::Malformed(id, what) => self.of(
                StoreErrorKind::Corrupt,
                format_args!("message {id} is malformed: {what}"),
            ),
        }
    }
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A URL that does not parse. The parser's cause (the error's source) is kept when it names
/// the option at fault ("unknown option `schema`", "invalid value for option `port`"), which
/// it does without the value; another (an unexpected character) may quote a character of the
/// password, and is left out.
pub(crate) fn bad_url(error: &tokio_postgres::Error) -> StoreError {
    let cause = std::error::Error::source(error)
        .map(|cause| cause.to_string())
        .filter(|cause| cause.contains("option `"))
        .map(|cause| format!(": {cause}"))
        .unwrap_or_default();
    StoreError::new(
        StoreErrorKind::Other,
        format!(
            "session store: not a PostgreSQL URL ({error}{cause}); give \
             postgres://user:password@host:port/database"
        ),
    )
}

/// The kind of a failure and what to do about it.
fn classify(error: &tokio_postgres::Error) -> (StoreErrorKind, &'static str) {
    use StoreErrorKind::*;
    let Some(code) = error.code() else {
        if error.is_closed() {
            return (
                Unreachable,
                "the connection to the server was closed; is the server still running?",
            );
        }
        let io =
            std::error::Error::source(error).is_some_and(|source| source.is::<std::io::Error>());
        return if io {
            (
                Unreachable,
                "cannot reach the server; is it running, and is the host and port right?",
            )
        } else {
            (Other, "the server or the client failed")
        };
    };
    let code = code.clone();
    if code == SqlState::INVALID_PASSWORD || code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION {
        (
            Auth,
            "the server refused the credentials; check the user and password of the URL",
        )
    } else if code == SqlState::INVALID_CATALOG_NAME {
        (
            Other,
            "the database does not exist; create it (createdb NAME) or fix the URL",
        )
    } else if code == SqlState::T_R_SERIALIZATION_FAILURE
        || code == SqlState::T_R_DEADLOCK_DETECTED
        || code == SqlState::UNIQUE_VIOLATION
    {
        (
            Conflict,
            "another transaction's write conflicted with this one; try again",
        )
    } else if code == SqlState::LOCK_NOT_AVAILABLE {
        (Locked, "another transaction holds a lock this call needs")
    } else if code == SqlState::ADMIN_SHUTDOWN
        || code == SqlState::CRASH_SHUTDOWN
        || code == SqlState::CANNOT_CONNECT_NOW
        || code == SqlState::TOO_MANY_CONNECTIONS
    {
        (
            Unreachable,
            "the server is shutting down, starting up or full; try again later",
        )
    } else if code == SqlState::INSUFFICIENT_PRIVILEGE
        || code == SqlState::READ_ONLY_SQL_TRANSACTION
    {
        (
            Unwritable,
            "the user may not write here (a read-only server, or missing privileges); grant \
             them or connect to the primary",
        )
    } else if code == SqlState::DISK_FULL || code == SqlState::IO_ERROR {
        (Io, "the server's disk failed or is full")
    } else if code == SqlState::UNDEFINED_TABLE || code == SqlState::UNDEFINED_COLUMN {
        (
            Corrupt,
            "the session schema is missing a table or column (was it changed by hand?)",
        )
    } else if code == SqlState::CHARACTER_NOT_IN_REPERTOIRE {
        (
            Other,
            "the text holds a NUL character (U+0000), which PostgreSQL's text cannot store \
             (the memory and SQLite stores can); take it out of the message or session id",
        )
    } else if code == SqlState::PROGRAM_LIMIT_EXCEEDED {
        (
            Other,
            "a value is too large for the session tables' indexes: on PostgreSQL a session id \
             may hold at most about 2,700 bytes once compressed; use a shorter one (a hash of a \
             longer key)",
        )
    } else {
        (Other, "the server refused the statement")
    }
}

/// The client's message: the server's for a database error (without the statement), else the
/// client's own with its causes (such as the system's "connection refused").
fn brief(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return format!("{} {}: {}", db.severity(), db.code().code(), db.message());
    }
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(source) = cause {
        text = format!("{text}: {source}");
        cause = source.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::Server;

    fn server(url: &str) -> String {
        Server::named(&url.parse().expect("a URL")).to_string()
    }

    #[test]
    fn the_server_is_named_without_its_password() {
        assert_eq!(
            server("postgres://agent:hunter2@db.example:6543/sessions"),
            "postgres://agent@db.example:6543/sessions"
        );
        assert_eq!(
            server("host=/run/pg user=agent password=hunter2"),
            "postgres://agent@/run/pg:5432/agent"
        );
        assert_eq!(
            server("postgres://a:hunter2@h1:1,h2:2/d"),
            "postgres://a@h1:1,h2:2/d"
        );
        assert_eq!(server("postgres://[::1]/d"), "postgres://[::1]:5432/d");
    }

    #[test]
    fn a_bad_url_is_an_error_that_keeps_the_password_to_itself() {
        for url in [
            "postgres://agent:hunter2@db:notaport/sessions",
            "postgres://agent:hunter2@db:5432/sessions?sslmode=sometimes",
            "host=db user=agent password=hunter2 port=x",
            "user=agent password='hunter2",
            "user=agent password hunter2",
        ] {
            let error = url
                .parse::<tokio_postgres::Config>()
                .map(|_| ())
                .expect_err(url);
            let text = super::bad_url(&error).to_string();
            assert!(!text.contains("hunter2"), "{url}: {text}");
            assert!(text.contains("not a PostgreSQL URL"), "{text}");
        }
    }

    #[test]
    fn a_bad_url_names_what_the_parser_refused() {
        // A Prisma-style URL: its `schema` option is none of libpq's.
        for (url, named) in [
            (
                "postgres://agent:hunter2@db:5432/sessions?schema=public",
                "schema",
            ),
            (
                "postgres://agent:hunter2@db:5432/sessions?sslmode=sometimes",
                "sslmode",
            ),
            ("postgres://agent:hunter2@db:notaport/sessions", "port"),
        ] {
            let error = url
                .parse::<tokio_postgres::Config>()
                .map(|_| ())
                .expect_err(url);
            let text = super::bad_url(&error).to_string();
            assert!(text.contains(named), "{url}: {text}");
            assert!(!text.contains("hunter2"), "{url}: {text}");
        }
    }
}
