//! `#[agent]` on an impl block: collects its `#[tool]` and `#[hook]` methods, checks every hook
//! matcher against the agent's tools, and implements `AgentSpec` through the builder API.

mod check;
mod expand;
mod parse;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ctxt::Ctxt;

/// Entry point of `#[agent]`.
pub(crate) fn entry(args: TokenStream, input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let attr = parse::AgentAttr::parse(&cx, args);
    let mut item: syn::ItemImpl = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => return not_an_impl(cx, &attr, input),
    };
    let mut model = parse::collect(&cx, attr, &mut item);
    let generated = if item.generics.params.is_empty() {
        check::drop_colliding_tools(&cx, &mut model);
        let plan = check::check(&cx, &model);
        // After an error the agent's types are still generated, with placeholder impls, so
        // code using them (`.builder()`, its tool types) compiles on and the error is the
        // only one.
        expand::expand(&model, &plan, cx.has_errors())
    } else {
        // Reported by `collect`: generated types could not name the impl's parameters.
        expand::generic_stub(&model, &item.generics)
    };
    let errors = cx.check();
    quote! {
        #item
        #generated
        #errors
    }
}

/// `#[agent]` on something other than an impl block: one error, and on a struct a placeholder
/// `AgentSpec` so that calls of `.builder()` add none.
fn not_an_impl(cx: Ctxt, attr: &parse::AgentAttr, input: TokenStream) -> TokenStream {
    let stub = match syn::parse2::<syn::Item>(input.clone()) {
        Ok(syn::Item::Struct(item)) => {
            let (struct_token, ident) = (&item.struct_token, &item.ident);
            cx.error_spanned_by(
                quote!(#struct_token #ident),
                format!(
                    "`#[agent]` goes on the agent's impl block, not on its struct: write `#[agent] impl {ident} {{ ... }}` with the agent's tools and hooks"
                ),
            );
            let krate = crate::common::crate_path(attr.crate_path.as_ref());
            let name = ident.to_string();
            let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
            expand::empty_spec(
                &krate,
                &quote!(#impl_generics),
                quote!(#ident #ty_generics),
                &quote!(#where_clause),
                &name,
            )
        }
        _ => {
            cx.error_spanned_by(
                &input,
                "`#[agent]` goes on the agent's impl block: `#[agent] impl MyAgent { ... }`",
            );
            TokenStream::new()
        }
    };
    let errors = cx.check();
    quote!(#input #stub #errors)
}
