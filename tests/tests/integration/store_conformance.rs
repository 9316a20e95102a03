//! The store conformance suite (`tests::conformance`) run against every store: in memory,
//! SQLite (a second `SqliteStore` on the same file as the other handle) and PostgreSQL (a fresh
//! database of the test cluster per test, a second connected store as the other handle).

use std::sync::Arc;

use agent_core::{MemoryStore, SessionStore, SqliteStore};
use agent_postgres::PostgresStore;
use tests::conformance::Subject;

mod memory {
    use super::*;

    async fn subject(_: &str) -> Subject {
        let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
        Subject {
            another: store.clone(),
            store,
            keep: Box::new(()),
        }
    }

    tests::store_conformance!(subject);
}

mod sqlite {
    use super::*;
    use crate::store_sqlite::TempDir;

    async fn subject(name: &str) -> Subject {
        let dir = TempDir::new(name);
        let path = dir.join("sessions.db");
        Subject {
            store: Arc::new(SqliteStore::open(&path).expect("open")),
            another: Arc::new(SqliteStore::open(&path).expect("open again")),
            keep: Box::new(dir),
        }
    }

    tests::store_conformance!(subject);
}

mod postgres {
    use super::*;

    async fn subject(name: &str) -> Subject {
        let url = tests::postgres::cluster().database(name).await;
        Subject {
            store: Arc::new(PostgresStore::connect(&url).await.expect("connect")),
            another: Arc::new(PostgresStore::connect(&url).await.expect("connect again")),
            keep: Box::new(()),
        }
    }

    tests::store_conformance!(subject);
}
