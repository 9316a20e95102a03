//! The tools of a request body, serialized once per client and list of tools rather than once
//! per request: a turn sends the same tools with every model call, and writing their schemas
//! (`serde_json::Value` maps) was about 6,800 instructions per call for two small tools, a
//! tenth of the request's cost (`whole_turn_agent` in benches/stream.rs).

use std::sync::{Arc, Mutex, PoisonError};

use agent_core::ToolSpec;
use serde_json::value::RawValue;

/// The JSON of the last list of tools a client sent (see the module). Cloning a client's
/// configuration starts it empty.
#[derive(Default)]
pub(crate) struct ToolsJson {
    last: Mutex<Option<Arc<Written>>>,
}

/// A list of tools and their JSON.
pub(crate) struct Written {
    /// The tools, held so that their allocations (which identify them) are not reused while
    /// this entry stands.
    specs: Vec<Arc<ToolSpec>>,
    /// How they were written (a provider's strict mode, for one).
    variant: bool,
    /// Their JSON, as the body's `tools` value.
    pub(crate) json: Box<RawValue>,
}

impl ToolsJson {
    /// The JSON of `specs` written as `variant`: the last one made when both are the same (the
    /// same `Arc`s, in the same order), else made by `write` and kept for the next request.
    pub(crate) fn get<E>(
        &self,
        specs: &[Arc<ToolSpec>],
        variant: bool,
        write: impl FnOnce() -> Result<Box<RawValue>, E>,
    ) -> Result<Arc<Written>, E> {
        let last = self
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(last) = last.filter(|last| {
            last.variant == variant
                && last.specs.len() == specs.len()
                && last.specs.iter().zip(specs).all(|(a, b)| Arc::ptr_eq(a, b))
        }) {
            return Ok(last);
        }
        let written = Arc::new(Written {
            specs: specs.to_vec(),
            variant,
            json: write()?,
        });
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(written.clone());
        Ok(written)
    }
}

impl Clone for ToolsJson {
    /// An empty one: a changed configuration writes its tools anew.
    fn clone(&self) -> Self {
        ToolsJson::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> Arc<ToolSpec> {
        Arc::new(ToolSpec {
            name: name.to_owned(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        })
    }

    #[test]
    fn the_same_tools_reuse_their_json_and_any_change_writes_it_anew() {
        let cache = ToolsJson::default();
        let (a, b) = (spec("a"), spec("b"));
        let writes = std::cell::Cell::new(0);
        let get = |specs: &[Arc<ToolSpec>], variant: bool| {
            let write = || {
                writes.set(writes.get() + 1);
                let names: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
                serde_json::value::to_raw_value(&(names, variant))
            };
            cache
                .get(specs, variant, write)
                .unwrap()
                .json
                .get()
                .to_owned()
        };
        let both = [a.clone(), b.clone()];
        assert_eq!(get(&both, false), r#"[["a","b"],false]"#);
        assert_eq!(get(&both.clone(), false), r#"[["a","b"],false]"#);
        assert_eq!(writes.get(), 1, "the same tools, written once");
        assert_eq!(get(&both, true), r#"[["a","b"],true]"#);
        assert_eq!(get(&[b.clone(), a.clone()], true), r#"[["b","a"],true]"#);
        assert_eq!(get(std::slice::from_ref(&a), true), r#"[["a"],true]"#);
        // An equal spec in another allocation is another tool.
        assert_eq!(get(&[spec("a")], true), r#"[["a"],true]"#);
        assert_eq!(writes.get(), 5);
        // A failed write keeps nothing.
        let failed = cache.get(std::slice::from_ref(&b), true, || Err("no"));
        assert!(failed.is_err());
        assert_eq!(get(&[b], true), r#"[["b"],true]"#);
        assert_eq!(writes.get(), 6);
    }
}
