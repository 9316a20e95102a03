/// Transfer money.
fn transfer(amount: u32) -> String {
    format!("sent {amount}")
}
///The types `#[tool]` generates for `transfer`: the tool `Transfer` and its arguments `TransferArgs`.
mod transfer_tool {
    #[allow(unused_imports)]
    use super::*;
    ///Arguments of the `transfer` tool.
    #[derive(
        ::agent_core::__private::serde::Deserialize,
        ::agent_core::__private::schemars::JsonSchema
    )]
    #[serde(crate = "::agent_core::__private::serde", deny_unknown_fields)]
    #[schemars(crate = "::agent_core::__private::schemars")]
    pub(super) struct TransferArgs {
        #[serde(deserialize_with = "TransferArgs::__de_amount")]
        #[schemars(with = "__TransferArgs_amount")]
        pub amount: u32,
    }
    #[doc(hidden)]
    #[allow(non_camel_case_types)]
    struct __TransferArgs_amount;
    impl ::agent_core::__private::schemars::JsonSchema for __TransferArgs_amount {
        fn schema_name() -> ::std::borrow::Cow<'static, str> {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<u32>::new()).schema_name()
        }
        fn schema_id() -> ::std::borrow::Cow<'static, str> {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<u32>::new()).schema_id()
        }
        fn inline_schema() -> bool {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<u32>::new()).inline_schema()
        }
        fn json_schema(
            generator: &mut ::agent_core::__private::schemars::SchemaGenerator,
        ) -> ::agent_core::__private::schemars::Schema {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<u32>::new()).json_schema(generator)
        }
        fn _schemars_private_is_option() -> bool {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<u32>::new()).is_option()
        }
    }
    ///The `transfer` tool: Transfer money.
    #[derive(
        ::core::clone::Clone,
        ::core::marker::Copy,
        ::core::fmt::Debug,
        ::core::default::Default
    )]
    pub(super) struct Transfer;
}
const _: () = {
    #[allow(dead_code)]
    fn __param() {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        ::agent_core::__private::tool_param::<
            u32,
            _,
        >((&::agent_core::__private::ParamProbe::<u32>::new()).verdict());
    }
};
impl transfer_tool::TransferArgs {
    #[doc(hidden)]
    fn __de_amount<'de, D: ::agent_core::__private::serde::Deserializer<'de>>(
        deserializer: D,
    ) -> ::core::result::Result<u32, D::Error> {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        (&::agent_core::__private::ParamProbe::<u32>::new())
            .deserialize_param(deserializer)
    }
}
impl ::core::clone::Clone for transfer_tool::TransferArgs {
    fn clone(&self) -> Self {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        Self {
            amount: (&::agent_core::__private::ParamProbe::<u32>::new())
                .clone_param(&self.amount),
        }
    }
}
impl ::core::fmt::Debug for transfer_tool::TransferArgs {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        f.debug_struct("TransferArgs")
            .field(
                "amount",
                (&::agent_core::__private::ParamProbe::<u32>::new())
                    .debug_param(&self.amount),
            )
            .finish()
    }
}
impl ::agent_core::__private::serde::Serialize for transfer_tool::TransferArgs {
    fn serialize<S: ::agent_core::__private::serde::Serializer>(
        &self,
        serializer: S,
    ) -> ::core::result::Result<S::Ok, S::Error> {
        use ::agent_core::__private::serde::ser::SerializeStruct as _;
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        let mut __state = serializer.serialize_struct("TransferArgs", 1usize)?;
        __state
            .serialize_field(
                "amount",
                (&::agent_core::__private::ParamProbe::<u32>::new())
                    .serialize_param(&self.amount),
            )?;
        __state.end()
    }
}
impl ::agent_core::Tool for transfer_tool::Transfer {
    const NAME: &'static str = "transfer";
    const DESCRIPTION: &'static str = "Transfer money.";
    type Args = transfer_tool::TransferArgs;
    type Output = String;
    const IDEMPOTENT: bool = true;
    const RETRIES: ::core::option::Option<usize> = ::core::option::Option::Some(2);
    #[allow(unused_variables)]
    fn needs_approval(&self, __args: &transfer_tool::TransferArgs) -> bool {
        over_a_thousand(__args)
    }
    fn schema() -> &'static ::agent_core::__private::serde_json::Value {
        static SCHEMA: ::agent_core::__private::OnceLock<
            ::agent_core::__private::serde_json::Value,
        > = ::agent_core::__private::OnceLock::new();
        SCHEMA.get_or_init(::agent_core::schema_for::<transfer_tool::TransferArgs>)
    }
    const RUNS_NOW: bool = true;
    fn call(
        &self,
        __args: transfer_tool::TransferArgs,
        __ctx: ::agent_core::ToolContext,
    ) -> impl ::core::future::Future<
        Output = ::core::result::Result<String, ::agent_core::ToolError>,
    > + ::core::marker::Send {
        async move { <Self as ::agent_core::Tool>::call_now(self, __args, __ctx) }
    }
    #[allow(unused_variables)]
    fn call_now(
        &self,
        __args: transfer_tool::TransferArgs,
        __ctx: ::agent_core::ToolContext,
    ) -> ::core::result::Result<String, ::agent_core::ToolError> {
        let __output = transfer(__args.amount);
        ::core::result::Result::Ok(__output)
    }
}
impl ::agent_core::ToolInput for transfer_tool::TransferArgs
where
    for<'__a> <transfer_tool::Transfer as ::agent_core::Tool>::Output: ::agent_core::__private::serde::Serialize,
{
    type Output = <transfer_tool::Transfer as ::agent_core::Tool>::Output;
    fn accepts(tool: &str) -> bool {
        tool == "transfer"
    }
    fn from_args(
        tool: &str,
        args: &::agent_core::AnyValue,
    ) -> ::core::option::Option<Self> {
        ::agent_core::__private::args_from(tool, "transfer", args)
    }
    fn into_args(
        self,
        tool: &dyn ::agent_core::DynTool,
    ) -> ::core::result::Result<::agent_core::AnyValue, ::std::string::String> {
        ::agent_core::__private::args_into(self, "transfer", tool)
    }
}
impl ::agent_core::__private::AcceptsTool<transfer_tool::Transfer>
for transfer_tool::TransferArgs {}
