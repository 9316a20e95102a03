//! `#[tool]`: a function the model can call. Free functions expand here; methods inside an
//! `#[agent]` impl are parsed with the same code and expanded by the agent.

mod expand;
mod parse;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ctxt::Ctxt;

pub(crate) use expand::{ToolOwner, declared_names, expand_free_tool, tool_code};
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
    let krate = attr.crate_path.clone();
    let tool = parse_tool(
        &cx,
        attr,
        krate.as_ref(),
        None,
        &item.attrs,
        &item.vis,
        &mut item.sig,
    );
    let generated = if let Some(receiver) = item.sig.receiver() {
        // Inside an impl block no items can be generated: the method is kept as written.
        cx.error_spanned_by(
            receiver,
            "`#[tool]` on a method needs `#[agent]` on its impl block, which collects the agent's tools",
        );
        TokenStream::new()
    } else {
        // After an error the tool's types are still generated, with placeholder impls, so code
        // using them compiles on and the error is the only one reported.
        expand_free_tool(&tool, cx.has_errors())
    };
    let errors = cx.check();
    quote! {
        #item
        #generated
        #errors
    }
}
