/// Index the files, reporting progress.
async fn index(root: String) -> Result<ToolStream<Progress, Summary>, std::io::Error> {
    Ok(ToolStream::new(updates(root)))
}
///The types `#[tool]` generates for `index`: the tool `Index` and its arguments `IndexArgs`.
mod index_tool {
    #[allow(unused_imports)]
    use super::*;
    ///Arguments of the `index` tool.
    #[derive(
        ::agent_core::__private::serde::Deserialize,
        ::agent_core::__private::schemars::JsonSchema
    )]
    #[serde(crate = "::agent_core::__private::serde", deny_unknown_fields)]
    #[schemars(crate = "::agent_core::__private::schemars")]
    pub(super) struct IndexArgs {
        #[serde(deserialize_with = "IndexArgs::__de_root")]
        #[schemars(with = "__IndexArgs_root")]
        pub root: String,
    }
    #[doc(hidden)]
    #[allow(non_camel_case_types)]
    struct __IndexArgs_root;
    impl ::agent_core::__private::schemars::JsonSchema for __IndexArgs_root {
        fn schema_name() -> ::std::borrow::Cow<'static, str> {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<String>::new()).schema_name()
        }
        fn schema_id() -> ::std::borrow::Cow<'static, str> {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<String>::new()).schema_id()
        }
        fn inline_schema() -> bool {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<String>::new()).inline_schema()
        }
        fn json_schema(
            generator: &mut ::agent_core::__private::schemars::SchemaGenerator,
        ) -> ::agent_core::__private::schemars::Schema {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<String>::new())
                .json_schema(generator)
        }
        fn _schemars_private_is_option() -> bool {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<String>::new()).is_option()
        }
    }
    ///The `index` tool: Index the files, reporting progress.
    #[derive(
        ::core::clone::Clone,
        ::core::marker::Copy,
        ::core::fmt::Debug,
        ::core::default::Default
    )]
    pub(super) struct Index;
}
const _: () = {
    #[allow(dead_code)]
    fn __param() {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        ::agent_core::__private::tool_param::<
            String,
            _,
        >((&::agent_core::__private::ParamProbe::<String>::new()).verdict());
    }
};
impl index_tool::IndexArgs {
    #[doc(hidden)]
    fn __de_root<'de, D: ::agent_core::__private::serde::Deserializer<'de>>(
        deserializer: D,
    ) -> ::core::result::Result<String, D::Error> {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        (&::agent_core::__private::ParamProbe::<String>::new())
            .deserialize_param(deserializer)
    }
}
impl ::core::clone::Clone for index_tool::IndexArgs {
    fn clone(&self) -> Self {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        Self {
            root: (&::agent_core::__private::ParamProbe::<String>::new())
                .clone_param(&self.root),
        }
    }
}
impl ::core::fmt::Debug for index_tool::IndexArgs {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        f.debug_struct("IndexArgs")
            .field(
                "root",
                (&::agent_core::__private::ParamProbe::<String>::new())
                    .debug_param(&self.root),
            )
            .finish()
    }
}
impl ::agent_core::__private::serde::Serialize for index_tool::IndexArgs {
    fn serialize<S: ::agent_core::__private::serde::Serializer>(
        &self,
        serializer: S,
    ) -> ::core::result::Result<S::Ok, S::Error> {
        use ::agent_core::__private::serde::ser::SerializeStruct as _;
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        let mut __state = serializer.serialize_struct("IndexArgs", 1usize)?;
        __state
            .serialize_field(
                "root",
                (&::agent_core::__private::ParamProbe::<String>::new())
                    .serialize_param(&self.root),
            )?;
        __state.end()
    }
}
impl ::agent_core::Tool for index_tool::Index {
    const NAME: &'static str = "index";
    const DESCRIPTION: &'static str = "Index the files, reporting progress.";
    type Args = index_tool::IndexArgs;
    type Output = Summary;
    fn schema() -> &'static ::agent_core::__private::serde_json::Value {
        static SCHEMA: ::agent_core::__private::OnceLock<
            ::agent_core::__private::serde_json::Value,
        > = ::agent_core::__private::OnceLock::new();
        SCHEMA.get_or_init(::agent_core::schema_for::<index_tool::IndexArgs>)
    }
    #[allow(unused_variables)]
    fn call(
        &self,
        __args: index_tool::IndexArgs,
        __ctx: ::agent_core::ToolContext,
    ) -> impl ::core::future::Future<
        Output = ::core::result::Result<Summary, ::agent_core::ToolError>,
    > + ::core::marker::Send {
        async move {
            let __output = index(__args.root).await;
            match __output {
                ::core::result::Result::Ok(__stream) => {
                    ::agent_core::__private::finish_stream::<
                        Progress,
                        Summary,
                    >(__stream, "index")
                        .await
                }
                ::core::result::Result::Err(__error) => {
                    ::core::result::Result::Err(
                        ::agent_core::__private::tool_error::<std::io::Error>(__error),
                    )
                }
            }
        }
    }
}
impl ::agent_core::ToolInput for index_tool::IndexArgs
where
    for<'__a> <index_tool::Index as ::agent_core::Tool>::Output: ::agent_core::__private::serde::Serialize,
{
    type Output = <index_tool::Index as ::agent_core::Tool>::Output;
    fn accepts(tool: &str) -> bool {
        tool == "index"
    }
    fn from_args(
        tool: &str,
        args: &::agent_core::AnyValue,
    ) -> ::core::option::Option<Self> {
        ::agent_core::__private::args_from(tool, "index", args)
    }
    fn into_args(
        self,
        tool: &dyn ::agent_core::DynTool,
    ) -> ::core::result::Result<::agent_core::AnyValue, ::std::string::String> {
        ::agent_core::__private::args_into(self, "index", tool)
    }
}
impl ::agent_core::__private::AcceptsTool<index_tool::Index> for index_tool::IndexArgs {}
