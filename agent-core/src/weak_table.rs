//! [`WeakTable`]: one shared value per session id, kept only while someone holds it.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use hashbrown::HashMap;

/// One value per key (a session id), shared by everyone who asked for it while any of them
/// still holds it, and made anew once none does. An agent's open-session marks and a store's
/// turn locks are such tables. Entries whose value is gone are forgotten when the table has
/// doubled since it was last pruned, so a process that sees many sessions does not keep one
/// entry for each.
pub(crate) struct WeakTable<T> {
    table: Mutex<Entries<T>>,
}

struct Entries<T> {
    /// hashbrown's map with its default hasher (foldhash, seeded at random per map): a turn
    /// looks its session up here, and SipHash over the id cost more than the lookup.
    values: HashMap<Arc<str>, Weak<T>>,
    /// The table is pruned when it grows to this size.
    prune_at: usize,
}

impl<T> Default for WeakTable<T> {
    fn default() -> Self {
        WeakTable {
            table: Mutex::new(Entries {
                values: HashMap::new(),
                prune_at: 0,
            }),
        }
    }
}

impl<T> WeakTable<T> {
    /// The value of `key`, shared with everyone holding it; made with `make` when none does.
    pub(crate) fn get_or_make(&self, key: &str, make: impl FnOnce() -> T) -> Arc<T> {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(value) = table.values.get(key).and_then(Weak::upgrade) {
            return value;
        }
        if table.values.len() >= table.prune_at {
            table.values.retain(|_, value| value.strong_count() > 0);
            table.prune_at = (table.values.len() * 2).max(64);
        }
        let value = Arc::new(make());
        table.values.insert(Arc::from(key), Arc::downgrade(&value));
        value
    }

    /// How many keys the table lists (some of them possibly no longer held).
    pub(crate) fn len(&self) -> usize {
        let table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        table.values.len()
    }
}

#[cfg(test)]
mod tests {
    use super::WeakTable;

    #[test]
    fn a_key_shares_its_value_while_held_and_the_table_forgets_the_rest() {
        let table = WeakTable::default();
        let a = table.get_or_make("a", || 1);
        assert!(std::sync::Arc::ptr_eq(&a, &table.get_or_make("a", || 2)));
        assert_eq!(
            *table.get_or_make("b", || 3),
            3,
            "another key, its own value"
        );
        drop(a);
        assert_eq!(
            *table.get_or_make("a", || 4),
            4,
            "made anew once nobody held it"
        );
        for n in 0..1000 {
            drop(table.get_or_make(&format!("s{n}"), || n));
        }
        assert!(table.len() <= 128, "{} keys listed", table.len());
    }
}
