/// Search the notes.
pub async fn search(
    query: String,
    limit: u32,
    tag: Option<String>,
    ctx: ToolContext,
) -> Result<Vec<String>, std::io::Error> {
    Ok(vec![query])
}
///The types `#[tool]` generates for `search`: the tool `Search` and its arguments `SearchArgs`.
pub mod search_tool {
    #[allow(unused_imports)]
    use super::*;
    ///Arguments of the `search-notes` tool.
    #[derive(
        ::agent_core::__private::serde::Deserialize,
        ::agent_core::__private::schemars::JsonSchema
    )]
    #[serde(crate = "::agent_core::__private::serde", deny_unknown_fields)]
    #[schemars(crate = "::agent_core::__private::schemars")]
    pub struct SearchArgs {
        /// What to look for.
        #[serde(deserialize_with = "SearchArgs::__de_query")]
        #[schemars(with = "__SearchArgs_query")]
        pub query: String,
        #[serde(
            default = "SearchArgs::__default_limit",
            deserialize_with = "SearchArgs::__nullable_limit"
        )]
        #[schemars(with = "__SearchArgs_limit")]
        pub limit: u32,
        #[serde(
            default,
            skip_serializing_if = "::core::option::Option::is_none",
            deserialize_with = "SearchArgs::__de_tag"
        )]
        #[schemars(with = "__SearchArgs_tag")]
        pub tag: Option<String>,
    }
    #[doc(hidden)]
    #[allow(non_camel_case_types)]
    struct __SearchArgs_query;
    impl ::agent_core::__private::schemars::JsonSchema for __SearchArgs_query {
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
    #[doc(hidden)]
    #[allow(non_camel_case_types)]
    struct __SearchArgs_limit;
    impl ::agent_core::__private::schemars::JsonSchema for __SearchArgs_limit {
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
    #[doc(hidden)]
    #[allow(non_camel_case_types)]
    struct __SearchArgs_tag;
    impl ::agent_core::__private::schemars::JsonSchema for __SearchArgs_tag {
        fn schema_name() -> ::std::borrow::Cow<'static, str> {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<Option<String>>::new()).schema_name()
        }
        fn schema_id() -> ::std::borrow::Cow<'static, str> {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<Option<String>>::new()).schema_id()
        }
        fn inline_schema() -> bool {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<Option<String>>::new())
                .inline_schema()
        }
        fn json_schema(
            generator: &mut ::agent_core::__private::schemars::SchemaGenerator,
        ) -> ::agent_core::__private::schemars::Schema {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<Option<String>>::new())
                .json_schema(generator)
        }
        fn _schemars_private_is_option() -> bool {
            use ::agent_core::__private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&::agent_core::__private::ParamProbe::<Option<String>>::new()).is_option()
        }
    }
    ///The `search-notes` tool: Search the notes.
    #[derive(
        ::core::clone::Clone,
        ::core::marker::Copy,
        ::core::fmt::Debug,
        ::core::default::Default
    )]
    pub struct Search;
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
const _: () = {
    #[allow(dead_code)]
    fn __param() {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        ::agent_core::__private::tool_param::<
            Option<String>,
            _,
        >((&::agent_core::__private::ParamProbe::<Option<String>>::new()).verdict());
    }
};
impl search_tool::SearchArgs {
    #[doc(hidden)]
    fn __default_limit() -> u32 {
        10
    }
    #[doc(hidden)]
    fn __nullable_limit<'de, D: ::agent_core::__private::serde::Deserializer<'de>>(
        deserializer: D,
    ) -> ::core::result::Result<u32, D::Error> {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        let value = (&::agent_core::__private::ParamProbe::<
            ::core::option::Option<u32>,
        >::new())
            .deserialize_param(deserializer)?;
        ::core::result::Result::Ok(value.unwrap_or_else(Self::__default_limit))
    }
    #[doc(hidden)]
    fn __de_query<'de, D: ::agent_core::__private::serde::Deserializer<'de>>(
        deserializer: D,
    ) -> ::core::result::Result<String, D::Error> {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        (&::agent_core::__private::ParamProbe::<String>::new())
            .deserialize_param(deserializer)
    }
    #[doc(hidden)]
    fn __de_tag<'de, D: ::agent_core::__private::serde::Deserializer<'de>>(
        deserializer: D,
    ) -> ::core::result::Result<Option<String>, D::Error> {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        (&::agent_core::__private::ParamProbe::<Option<String>>::new())
            .deserialize_param(deserializer)
    }
}
impl ::core::clone::Clone for search_tool::SearchArgs {
    fn clone(&self) -> Self {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        Self {
            query: (&::agent_core::__private::ParamProbe::<String>::new())
                .clone_param(&self.query),
            limit: (&::agent_core::__private::ParamProbe::<u32>::new())
                .clone_param(&self.limit),
            tag: (&::agent_core::__private::ParamProbe::<Option<String>>::new())
                .clone_param(&self.tag),
        }
    }
}
impl ::core::fmt::Debug for search_tool::SearchArgs {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        f.debug_struct("SearchArgs")
            .field(
                "query",
                (&::agent_core::__private::ParamProbe::<String>::new())
                    .debug_param(&self.query),
            )
            .field(
                "limit",
                (&::agent_core::__private::ParamProbe::<u32>::new())
                    .debug_param(&self.limit),
            )
            .field(
                "tag",
                (&::agent_core::__private::ParamProbe::<Option<String>>::new())
                    .debug_param(&self.tag),
            )
            .finish()
    }
}
impl ::agent_core::__private::serde::Serialize for search_tool::SearchArgs {
    fn serialize<S: ::agent_core::__private::serde::Serializer>(
        &self,
        serializer: S,
    ) -> ::core::result::Result<S::Ok, S::Error> {
        use ::agent_core::__private::serde::ser::SerializeStruct as _;
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        let mut __state = serializer.serialize_struct("SearchArgs", 3usize)?;
        __state
            .serialize_field(
                "query",
                (&::agent_core::__private::ParamProbe::<String>::new())
                    .serialize_param(&self.query),
            )?;
        __state
            .serialize_field(
                "limit",
                (&::agent_core::__private::ParamProbe::<u32>::new())
                    .serialize_param(&self.limit),
            )?;
        __state
            .serialize_field(
                "tag",
                (&::agent_core::__private::ParamProbe::<Option<String>>::new())
                    .serialize_param(&self.tag),
            )?;
        __state.end()
    }
}
impl ::agent_core::Tool for search_tool::Search {
    const NAME: &'static str = "search-notes";
    const DESCRIPTION: &'static str = "Search the notes.";
    type Args = search_tool::SearchArgs;
    type Output = Vec<String>;
    const TIMEOUT: ::core::option::Option<::core::time::Duration> = ::core::option::Option::Some(
        ::core::time::Duration::from_millis(5000),
    );
    fn schema() -> &'static ::agent_core::__private::serde_json::Value {
        static SCHEMA: ::agent_core::__private::OnceLock<
            ::agent_core::__private::serde_json::Value,
        > = ::agent_core::__private::OnceLock::new();
        SCHEMA.get_or_init(::agent_core::schema_for::<search_tool::SearchArgs>)
    }
    #[allow(unused_variables)]
    fn call(
        &self,
        __args: search_tool::SearchArgs,
        __ctx: ::agent_core::ToolContext,
    ) -> impl ::core::future::Future<
        Output = ::core::result::Result<Vec<String>, ::agent_core::ToolError>,
    > + ::core::marker::Send {
        async move {
            let __output = search(__args.query, __args.limit, __args.tag, __ctx).await;
            match __output {
                ::core::result::Result::Ok(__value) => {
                    ::core::result::Result::Ok(__value)
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
impl ::agent_core::ToolInput for search_tool::SearchArgs
where
    for<'__a> <search_tool::Search as ::agent_core::Tool>::Output: ::agent_core::__private::serde::Serialize,
{
    type Output = <search_tool::Search as ::agent_core::Tool>::Output;
    fn accepts(tool: &str) -> bool {
        tool == "search-notes"
    }
    fn from_args(
        tool: &str,
        args: &::agent_core::AnyValue,
    ) -> ::core::option::Option<Self> {
        ::agent_core::__private::args_from(tool, "search-notes", args)
    }
    fn into_args(
        self,
        tool: &dyn ::agent_core::DynTool,
    ) -> ::core::result::Result<::agent_core::AnyValue, ::std::string::String> {
        ::agent_core::__private::args_into(self, "search-notes", tool)
    }
}
impl ::agent_core::__private::AcceptsTool<search_tool::Search>
for search_tool::SearchArgs {}
