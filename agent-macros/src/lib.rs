//! placeholder
use proc_macro::TokenStream;
/// x
#[proc_macro_attribute]
pub fn agent(_a: TokenStream, i: TokenStream) -> TokenStream {
    i
}
/// x
#[proc_macro_attribute]
pub fn tool(_a: TokenStream, i: TokenStream) -> TokenStream {
    i
}
/// x
#[proc_macro_attribute]
pub fn hook(_a: TokenStream, i: TokenStream) -> TokenStream {
    i
}
