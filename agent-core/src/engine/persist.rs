//! Store writes wrapped in their hooks: before/after_create_message around every insert and
//! before/after_update_message around every update, for a turn's rows and for messages added
//! outside a turn (`Conversation::inject_message`).

use std::sync::Arc;

use super::runtime::AgentRuntime;
use crate::hooks::{
    CreateMessageContext, MessageCreatedContext, RunAgent, TurnError, UpdateMessageContext,
};
use crate::hooks::{chain, observe};
use crate::message::Message;
use crate::store::{MessageUpdate, NewMessage, StoreError, StoredMessage};

/// Why a write did not happen, or failed once it had.
pub(crate) enum WriteError {
    /// The store failed.
    Store(StoreError),
    /// A before-hook whose `on_error` says fail closed failed: nothing was written.
    Hook(TurnError),
    /// The row (this id) was written, then a fail-closed after-hook failed.
    After(TurnError, i64),
}

/// How a write treats a fail-closed message hook that fails.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strictness {
    /// As its policy says: the write stops (before-hooks) or reports it (after-hooks).
    Policy,
    /// As a fail-open one: logged, the write goes on with the last good value. For the rows
    /// that settle a turn that already ended, which must be written whatever a hook does.
    Lenient,
}

/// Writes rows of one session through the agent's store and its message hooks.
pub(crate) struct Writer<'a> {
    pub(crate) agent: &'a AgentRuntime,
    pub(crate) session: &'a Arc<str>,
    /// The entry agent of the turn writing (`None` outside a turn).
    pub(crate) turn: Option<&'a Arc<RunAgent>>,
}

impl Writer<'_> {
    /// The id of the turn writing (`None` outside a turn).
    fn request_id(&self) -> Option<Arc<str>> {
        self.turn.map(|agent| agent.request_id.clone())
    }

    /// before_create_message, the insert, after_create_message.
    pub(crate) async fn insert(&self, row: NewMessage) -> Result<StoredMessage, WriteError> {
        self.insert_as(row, Strictness::Policy).await
    }

    /// [`insert`](Self::insert) with the given strictness.
    pub(crate) async fn insert_as(
        &self,
        row: NewMessage,
        strictness: Strictness,
    ) -> Result<StoredMessage, WriteError> {
        let hooks = &self.agent.hooks;
        let row = if hooks.before_create_message.is_empty() {
            row
        } else {
            let mut ctx = CreateMessageContext {
                session_id: self.session.clone(),
                agent: self.turn.cloned(),
                request_id: self.request_id(),
                row,
            };
            let chained = chain(&hooks.before_create_message, &mut ctx, |ctx, out| {
                if let Some(row) = out {
                    ctx.row = row;
                }
                true
            })
            .await;
            if strictness == Strictness::Policy {
                chained.map_err(WriteError::Hook)?;
            }
            ctx.row
        };
        let stored = self
            .agent
            .store
            .insert(self.session, row)
            .await
            .map_err(WriteError::Store)?;
        if hooks.after_create_message.is_empty() {
            return Ok(stored);
        }
        let ctx = MessageCreatedContext {
            session_id: self.session.clone(),
            agent: self.turn.cloned(),
            request_id: self.request_id(),
            row: stored,
        };
        let observed = observe(&hooks.after_create_message, &ctx).await;
        match observed {
            Err(error) if strictness == Strictness::Policy => {
                Err(WriteError::After(error, ctx.row.id))
            }
            _ => Ok(ctx.row),
        }
    }

    /// Whether inserts go straight to the store: no message hook reads them.
    pub(crate) fn inserts_plain(&self) -> bool {
        let hooks = &self.agent.hooks;
        hooks.before_create_message.is_empty() && hooks.after_create_message.is_empty()
    }

    /// Whether updates go straight to the store: no message hook reads them.
    pub(crate) fn updates_plain(&self) -> bool {
        let hooks = &self.agent.hooks;
        hooks.before_update_message.is_empty() && hooks.after_update_message.is_empty()
    }

    /// [`insert_as`](Self::insert_as) giving the row's id. Without message hooks to read
    /// the row, the store is not asked to build the row it stored
    /// ([`SessionStore::insert_id`](crate::SessionStore::insert_id): `MemoryStore` then keeps
    /// the message without copying it).
    pub(crate) async fn insert_id(
        &self,
        row: NewMessage,
        strictness: Strictness,
    ) -> Result<i64, WriteError> {
        if self.inserts_plain() {
            let inserted = self.agent.store.insert_id(self.session, row).await;
            return inserted.map_err(WriteError::Store);
        }
        Ok(self.insert_as(row, strictness).await?.id)
    }

    /// before_update_message, the update, after_update_message; gives the message the update
    /// stored when a before_update_message hook could have changed it (see
    /// [`update_as`](Self::update_as)).
    pub(crate) async fn update(
        &self,
        id: i64,
        update: MessageUpdate,
    ) -> Result<Option<Message>, WriteError> {
        self.update_as(id, update, Strictness::Policy).await
    }

    /// [`update`](Self::update) with the given strictness. Gives the message the update stored
    /// when before_update_message hooks ran and it sets one (`None` otherwise: the message is
    /// the one given).
    pub(crate) async fn update_as(
        &self,
        id: i64,
        update: MessageUpdate,
        strictness: Strictness,
    ) -> Result<Option<Message>, WriteError> {
        let hooks = &self.agent.hooks;
        if self.updates_plain() {
            return self
                .agent
                .store
                .update(self.session, id, update)
                .await
                .map(|()| None)
                .map_err(WriteError::Store);
        }
        let mut ctx = UpdateMessageContext {
            session_id: self.session.clone(),
            agent: self.turn.cloned(),
            request_id: self.request_id(),
            id,
            update,
        };
        let chained = chain(&hooks.before_update_message, &mut ctx, |ctx, out| {
            if let Some(update) = out {
                ctx.update = update;
            }
            true
        })
        .await;
        if strictness == Strictness::Policy {
            chained.map_err(WriteError::Hook)?;
        }
        self.agent
            .store
            .update(self.session, id, ctx.update.clone())
            .await
            .map_err(WriteError::Store)?;
        match observe(&hooks.after_update_message, &ctx).await {
            Err(error) if strictness == Strictness::Policy => Err(WriteError::After(error, id)),
            _ if hooks.before_update_message.is_empty() => Ok(None),
            _ => Ok(ctx.update.message),
        }
    }
}
