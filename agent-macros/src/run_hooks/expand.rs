//! Writes the `impl RunHooks` of a `#[run_hooks]` impl block: its run hook methods, as written.
//! Methods and items set aside after an error go to an inherent impl, so their bodies still compile and
//! the error is the only one reported.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Path;

use super::parse::RunHooksImpl;
use crate::common::crate_path;

pub(crate) fn expand(model: &RunHooksImpl, krate: Option<&Path>) -> TokenStream {
    let krate = crate_path(krate);
    let item = &model.item;
    let attrs = &item.attrs;
    let self_ty = &item.self_ty;
    let (impl_generics, _, where_clause) = item.generics.split_for_impl();
    let hooks = &model.hooks;
    let set_aside = (!model.set_aside.is_empty()).then(|| {
        let items = &model.set_aside;
        quote! {
            #[allow(dead_code)]
            impl #impl_generics #self_ty #where_clause {
                #(#items)*
            }
        }
    });
    quote! {
        #(#attrs)*
        impl #impl_generics #krate::RunHooks for #self_ty #where_clause {
            #(#hooks)*
        }
        #set_aside
    }
}
