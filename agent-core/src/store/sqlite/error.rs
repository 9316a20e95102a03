//! Database failures as [`StoreError`]s that name the file and say what to do.

use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::ErrorCode;

use super::row::RowError;
use super::schema::{LATEST_VERSION, MigrateError};
use crate::store::{StoreError, StoreErrorKind};

/// The database file a store works on, and its busy timeout: what every error names.
#[derive(Clone, Debug)]
pub(super) struct DbFile {
    /// The path as the user gave it.
    pub path: Arc<Path>,
    /// How long a write waits for another connection's lock.
    pub busy_timeout: Duration,
}

impl DbFile {
    /// An error about this file.
    pub(crate) fn at(&self, what: impl std::fmt::Display) -> StoreError {
        self.of(StoreErrorKind::Other, what)
    }

    /// An error of a kind about this file.
    pub(crate) fn of(&self, kind: StoreErrorKind, what: impl std::fmt::Display) -> StoreError {
        StoreError::new(
            kind,
            format!("session store {}: {what}", self.path.display()),
        )
    }

    /// A failure the database reported.
    pub(crate) fn sqlite(&self, error: &rusqlite::Error) -> StoreError {
        let (kind, advice) = match error.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => (
                StoreErrorKind::Locked,
                format!(
                    "database is locked: another process or connection holds it (waited {} ms); \
                     let it finish or close it, then try again",
                    self.busy_timeout.as_millis()
                ),
            ),
            Some(ErrorCode::NotADatabase) => (
                StoreErrorKind::Corrupt,
                "file is not a database (it is corrupt, encrypted or another kind of file); move it \
                 aside or choose another path"
                    .to_owned(),
            ),
            Some(ErrorCode::DatabaseCorrupt) => (
                StoreErrorKind::Corrupt,
                "the database is corrupt (disk image is malformed); restore it from a backup or move \
                 it aside"
                    .to_owned(),
            ),
            Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => {
                (StoreErrorKind::Unwritable, READ_ONLY.to_owned())
            }
            Some(ErrorCode::CannotOpen) => cannot_open(&self.path),
            Some(ErrorCode::DiskFull) => (
                StoreErrorKind::Io,
                "the disk is full; free some space and try again".to_owned(),
            ),
            Some(ErrorCode::SystemIoFailure) => (
                StoreErrorKind::Io,
                "disk I/O error; check the disk, and that the file and its directory are writable"
                    .to_owned(),
            ),
            _ => return self.at(brief(error)),
        };
        self.of(kind, format_args!("{advice} (sqlite: {})", brief(error)))
    }

    /// A file this process may read but not write.
    pub(crate) fn read_only(&self) -> StoreError {
        self.of(StoreErrorKind::Unwritable, READ_ONLY)
    }

    /// A schema that could not be brought up to date.
    pub(crate) fn migrate(&self, error: &MigrateError) -> StoreError {
        match error {
            MigrateError::Sqlite(error) => self.sqlite(error),
            MigrateError::Unsupported(found) if *found > LATEST_VERSION => self.of(StoreErrorKind::NewerSchema, format_args!(
                "the database was written by a newer version of agent-core (schema version {found}, this \
                 build knows up to {LATEST_VERSION}); upgrade agent-core or choose another path"
            )),
            MigrateError::Step(to, error) if error.sqlite_error_code().is_none_or(|code| code == ErrorCode::Unknown) => {
                self.at(format_args!(
                    "cannot create the session schema (version {to}): {}; is this another program's \
                     database? choose another path",
                    brief(error)
                ))
            }
            MigrateError::Step(_, error) => self.sqlite(error),
            MigrateError::Foreign(found, missing) => self.at(format_args!(
                "not an agent-core session store: the file records schema version {found} but has \
                 no {missing}; is this another program's database? choose another path"
            )),
            MigrateError::Taken(table) => self.at(format_args!(
                "cannot create the session schema: table `{table}` already exists; is this \
                 another program's database? choose another path"
            )),
            MigrateError::Unsupported(found) => {
                self.at(format_args!("unknown schema version {found}: this is not an agent-core session store"))
            }
        }
    }

    /// A row that could not be read back.
    pub(crate) fn row(&self, error: &RowError) -> StoreError {
        match error {
            RowError::Sqlite(error) => self.sqlite(error),
            RowError::Malformed(id, what) => self.of(
                StoreErrorKind::Corrupt,
                format_args!("message {id} is malformed: {what}"),
            ),
        }
    }

    /// `journal_mode = WAL` did not take (some file systems, such as network ones, cannot share
    /// WAL memory).
    pub(crate) fn no_wal(&self, mode: &str) -> StoreError {
        self.at(format_args!(
            "could not switch to WAL journal mode (the database stays in `{mode}`); put the file on a \
             local file system"
        ))
    }
}

/// What a read-only database means and what to do about it.
const READ_ONLY: &str = "permission denied: the database is read-only for this process; make the \
                         file, its directory and its -wal/-shm files writable";

/// SQLite's message, without the statement text it may carry.
fn brief(error: &rusqlite::Error) -> String {
    match error {
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    }
}

/// Why the file at `path` cannot be opened or created, as far as the file system tells.
fn cannot_open(path: &Path) -> (StoreErrorKind, String) {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if path.is_dir() {
        return (
            StoreErrorKind::Io,
            "the path is a directory, not a database file; give a file path".to_owned(),
        );
    }
    match fs::metadata(parent) {
        Err(error) if error.kind() == ErrorKind::NotFound => {
            return (
                StoreErrorKind::Io,
                format!(
                    "cannot open the database file: directory {} does not exist; create it first",
                    parent.display()
                ),
            );
        }
        Ok(meta) if !meta.is_dir() => {
            return (
                StoreErrorKind::Io,
                format!(
                    "cannot open the database file: {} is not a directory",
                    parent.display()
                ),
            );
        }
        _ => {}
    }
    // Ask the file system directly (the file exists: open it; it does not: create and remove it).
    let probe = if path.exists() {
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map(drop)
    } else {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .and_then(|_| fs::remove_file(path))
    };
    match probe {
        Err(error) if error.kind() == ErrorKind::PermissionDenied => (
            StoreErrorKind::Unwritable,
            format!(
                "cannot open the database file: permission denied; make {} writable by this user",
                if path.exists() { path } else { parent }.display()
            ),
        ),
        Err(error) => (
            StoreErrorKind::Io,
            format!("cannot open the database file: {error}"),
        ),
        Ok(()) => (StoreErrorKind::Unwritable, "cannot open the database file (or its -wal/-shm files next to it): permission denied or too \
             many open files? check that the file and its directory are writable"
            .to_owned()),
    }
}
