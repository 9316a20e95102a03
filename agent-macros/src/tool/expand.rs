//! Code for one tool: its args struct, its tool type and their trait impls.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::parse::{Output, ToolFn};
use crate::common::crate_path;

/// Where the tool function lives.
pub(crate) enum ToolOwner<'a> {
    /// A free function.
    Free,
    /// A method of the agent type.
    Method(&'a syn::Type),
}

/// `serde(crate = "...")` and `schemars(crate = "...")` take the path as a string.
fn path_string(tokens: TokenStream) -> String {
    tokens.to_string().replace(' ', "")
}

/// Generates the args struct, the tool type, and `Tool`, `ToolInput`, `AcceptsTool` impls.
/// `krate` is the agent's crate path for methods; free tools use their own `crate` option.
pub(crate) fn expand_tool(tool: &ToolFn, owner: &ToolOwner<'_>) -> TokenStream {
    expand_tool_with(tool, owner, &crate_path(tool.attr.crate_path.as_ref()))
}

pub(crate) fn expand_tool_with(
    tool: &ToolFn,
    owner: &ToolOwner<'_>,
    krate: &TokenStream,
) -> TokenStream {
    let private = quote!(#krate::__private);
    let serde_crate = path_string(quote!(#private::serde));
    let schemars_crate = path_string(quote!(#private::schemars));
    let vis = &tool.vis;
    let fn_ident = &tool.ident;
    let tool_ty = tool.type_ident();
    let args_ty = tool.args_ident();
    let name = &tool.name;
    let description = &tool.description;
    let args_doc = format!("Arguments of the `{name}` tool.");
    let tool_doc = format!(
        "The `{name}` tool: {}",
        tool.description.lines().next().unwrap_or_default()
    );

    let mut fields = Vec::new();
    let mut defaults = Vec::new();
    for param in &tool.params {
        let ident = &param.ident;
        let ty = &param.ty;
        let docs = &param.docs;
        let default_attr = param.default.as_ref().map(|expr| {
            let default_fn = format_ident!("__default_{}", ident);
            let nullable_fn = format_ident!("__nullable_{}", ident);
            let path = format!("{args_ty}::{default_fn}");
            let nullable_path = format!("{args_ty}::{nullable_fn}");
            defaults.push(quote_spanned! {expr.span()=>
                #[doc(hidden)]
                fn #default_fn() -> #ty {
                    #expr
                }
            });
            // `null` also means "use the default": providers' strict modes make every parameter
            // required and send `null` for the ones the model leaves out.
            defaults.push(quote! {
                #[doc(hidden)]
                fn #nullable_fn<'de, D: #private::serde::Deserializer<'de>>(
                    deserializer: D,
                ) -> ::core::result::Result<#ty, D::Error> {
                    let value: ::core::option::Option<#ty> =
                        #private::serde::Deserialize::deserialize(deserializer)?;
                    ::core::result::Result::Ok(value.unwrap_or_else(Self::#default_fn))
                }
            });
            quote!(#[serde(default = #path, deserialize_with = #nullable_path)])
        });
        fields.push(quote! {
            #(#docs)*
            #default_attr
            pub #ident: #ty
        });
    }
    let defaults_impl = (!defaults.is_empty()).then(|| {
        quote! {
            impl #args_ty {
                #(#defaults)*
            }
        }
    });
    let field_idents: Vec<_> = tool.params.iter().map(|p| &p.ident).collect();

    let call_args = tool.call_order.iter().map(|slot| match slot {
        Some(index) => {
            let ident = &tool.params[*index].ident;
            quote!(#ident)
        }
        None => quote!(__ctx),
    });
    let (tool_struct, callee) = match owner {
        ToolOwner::Free => (
            quote! {
                #[doc = #tool_doc]
                #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
                #vis struct #tool_ty;
            },
            quote!(#fn_ident),
        ),
        ToolOwner::Method(self_ty) if tool.has_receiver => (
            quote! {
                #[doc = #tool_doc]
                #[derive(::core::clone::Clone)]
                #vis struct #tool_ty(pub ::std::sync::Arc<#self_ty>);
            },
            quote!(self.0.#fn_ident),
        ),
        ToolOwner::Method(self_ty) => (
            quote! {
                #[doc = #tool_doc]
                #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
                #vis struct #tool_ty;
            },
            quote!(<#self_ty>::#fn_ident),
        ),
    };
    let awaited = if tool.is_async {
        quote!(.await)
    } else {
        quote!()
    };
    let (output_ty, wrap) = match &tool.output {
        Output::Unit => (
            quote!(()),
            quote!({
                __output;
                ::core::result::Result::Ok(())
            }),
        ),
        Output::Plain(ty) => (
            quote_spanned!(ty.span()=> #ty),
            quote!(::core::result::Result::Ok(__output)),
        ),
        Output::Fallible(ty) => (
            quote_spanned!(ty.span()=> #ty),
            quote!(::core::result::Result::map_err(__output, #krate::ToolError::from_display)),
        ),
    };

    quote! {
        #[doc = #args_doc]
        #[derive(
            ::core::clone::Clone,
            ::core::fmt::Debug,
            #private::serde::Serialize,
            #private::serde::Deserialize,
            #private::schemars::JsonSchema,
        )]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        #vis struct #args_ty {
            #(#fields,)*
        }

        #defaults_impl

        #tool_struct

        impl #krate::Tool for #tool_ty {
            const NAME: &'static str = #name;
            const DESCRIPTION: &'static str = #description;
            type Args = #args_ty;
            type Output = #output_ty;

            fn schema() -> &'static #private::serde_json::Value {
                static SCHEMA: #private::OnceLock<#private::serde_json::Value> = #private::OnceLock::new();
                SCHEMA.get_or_init(#krate::schema_for::<#args_ty>)
            }

            #[allow(unused_variables)]
            fn call(
                &self,
                __args: #args_ty,
                __ctx: #krate::ToolContext,
            ) -> impl ::core::future::Future<
                Output = ::core::result::Result<#output_ty, #krate::ToolError>,
            > + ::core::marker::Send {
                let #args_ty { #(#field_idents,)* } = __args;
                async move {
                    let __output = #callee(#(#call_args),*)#awaited;
                    #wrap
                }
            }
        }

        impl #krate::ToolInput for #args_ty {
            type Output = <#tool_ty as #krate::Tool>::Output;

            fn accepts(tool: &str) -> bool {
                tool == #name
            }

            fn from_args(tool: &str, args: &#krate::AnyValue) -> ::core::option::Option<Self> {
                #private::args_from(tool, #name, args)
            }

            fn into_args(
                self,
                tool: &dyn #krate::DynTool,
            ) -> ::core::result::Result<#krate::AnyValue, ::std::string::String> {
                #private::args_into(self, #name, tool)
            }
        }

        impl #krate::AcceptsTool<#tool_ty> for #args_ty {}
    }
}
