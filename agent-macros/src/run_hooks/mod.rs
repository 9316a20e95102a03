//! `#[run_hooks]` on an impl block: its methods are the type's run hooks (`on_agent_start`,
//! `on_handoff`, ...), checked against the `RunHooks` trait's signatures and written into an
//! `impl RunHooks` for the type.

mod expand;
mod parse;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ctxt::Ctxt;

/// Entry point of `#[run_hooks]`.
pub(crate) fn entry(args: TokenStream, input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let attr = parse::RunHooksAttr::parse(&cx, args);
    let item: syn::ItemImpl = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            cx.error_spanned_by(
                &input,
                "`#[run_hooks]` goes on an impl block of the observer: `#[run_hooks] impl Timeline { fn on_agent_start(&self, agent: &RunAgent) { ... } }`",
            );
            let errors = cx.check();
            return quote!(#input #errors);
        }
    };
    let generated = if let Some((trait_path, _)) = &item.trait_ {
        let self_ty = &item.self_ty;
        cx.error_spanned_by(
            trait_path,
            format!(
                "`#[run_hooks]` writes the `RunHooks` impl itself: put it on `impl {} {{ ... }}` holding the run hook methods",
                quote!(#self_ty).to_string().replace(' ', "")
            ),
        );
        // A trait impl is kept as written: it already is one.
        quote!(#item)
    } else {
        let model = parse::collect(&cx, item, attr.crate_path.as_ref());
        expand::expand(&model, attr.crate_path.as_ref())
    };
    let errors = cx.check();
    quote! {
        #generated
        #errors
    }
}

/// The type of a run hook's parameter.
#[derive(Clone, Copy)]
pub(crate) enum Param {
    /// `&T`, `T` one of agent-core's types.
    Borrowed(&'static str),
    /// `&str`.
    Str,
    /// `usize`.
    Usize,
}

/// A method of `RunHooks`: its name and its parameters after `&self`.
pub(crate) struct RunHook {
    pub(crate) name: &'static str,
    pub(crate) params: &'static [(&'static str, Param)],
}

const AGENT: (&str, Param) = ("agent", Param::Borrowed("RunAgent"));

/// Every method of `RunHooks`, as the trait declares it.
pub(crate) const RUN_HOOKS: &[RunHook] = &[
    RunHook {
        name: "on_agent_start",
        params: &[AGENT],
    },
    RunHook {
        name: "on_agent_end",
        params: &[AGENT, ("output", Param::Str)],
    },
    RunHook {
        name: "on_agent_output",
        params: &[AGENT, ("output", Param::Borrowed("OutputReport"))],
    },
    RunHook {
        name: "on_handoff",
        params: &[("from", Param::Borrowed("RunAgent")), ("to", Param::Str)],
    },
    RunHook {
        name: "on_tool_start",
        params: &[AGENT, ("call", Param::Borrowed("ToolCall"))],
    },
    RunHook {
        name: "on_tool_end",
        params: &[AGENT, ("result", Param::Borrowed("ToolResultRecord"))],
    },
    RunHook {
        name: "on_llm_start",
        params: &[AGENT, ("request", Param::Borrowed("ModelRequest"))],
    },
    RunHook {
        name: "on_llm_end",
        params: &[AGENT, ("text", Param::Str), ("tool_calls", Param::Usize)],
    },
];

impl Param {
    /// The type as the trait writes it.
    pub(crate) fn written(self) -> String {
        match self {
            Param::Borrowed(name) => format!("&{name}"),
            Param::Str => "&str".to_owned(),
            Param::Usize => "usize".to_owned(),
        }
    }
}

impl RunHook {
    /// The method's signature, as the trait writes it.
    pub(crate) fn signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(name, ty)| format!(", {name}: {}", ty.written()))
            .collect();
        format!("fn {}(&self{})", self.name, params.concat())
    }
}
