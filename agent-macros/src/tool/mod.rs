//! `#[tool]`: a function the model can call. Free functions expand here; methods inside an
//! `#[agent]` impl are parsed with the same code and expanded by the agent.

mod expand;
mod parse;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ctxt::Ctxt;

pub(crate) use expand::{ToolOwner, expand_tool, expand_tool_with};
pub(crate) use parse::{ToolAttr, ToolFn, parse_tool};

/// Entry point of `#[tool]` on a free function.
pub(crate) fn entry(args: TokenStream, input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let mut item: syn::ItemFn = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            cx.error_spanned_by(&input, "`#[tool]` goes on a function");
            let errors = cx.check();
            return quote!(#errors #input);
        }
    };
    let attr = ToolAttr::parse(&cx, args);
    let tool = parse_tool(&cx, attr, &item.attrs, &item.vis, &mut item.sig);
    if let Some(receiver) = item.sig.receiver() {
        cx.error_spanned_by(
            receiver,
            "`#[tool]` on a method needs `#[agent]` on its impl block, which collects the agent's tools",
        );
    }
    let generated = match &tool {
        Some(tool) if !cx.has_errors() => expand_tool(tool, &ToolOwner::Free),
        _ => TokenStream::new(),
    };
    let errors = cx.check();
    quote! {
        #item
        #generated
        #errors
    }
}
