impl FileAgent {
    /// Read a UTF-8 text file.
    async fn read_file(&self, path: String) -> Result<String, ToolError> {
        Ok(path)
    }
    /// Replace a file's contents.
    fn write_file(&self, path: String, contents: String) -> usize {
        contents.len()
    }
    async fn sandbox(
        &self,
        ctx: &ToolCallContext<FileCall>,
    ) -> ToolCallDecision<FileCall> {
        ToolCallDecision::Allow
    }
    fn audit(
        &self,
        ctx: &ToolCallResultContext<file_agent_tools::WriteFileArgs, usize>,
    ) {}
    fn meter(&self, ctx: &ChunkContext) {}
}
///The types `#[agent]` generates for the tools of `FileAgent`: each tool's type and its arguments (`ReadFile`, `ReadFileArgs` for `read_file`).
mod file_agent_tools {
    #[allow(unused_imports)]
    use super::*;
    ///Arguments of the `read_file` tool.
    #[derive(
        ::agent_core::__private::serde::Deserialize,
        ::agent_core::__private::schemars::JsonSchema
    )]
    #[serde(crate = "::agent_core::__private::serde", deny_unknown_fields)]
    #[schemars(crate = "::agent_core::__private::schemars")]
    pub(super) struct ReadFileArgs {
        #[serde(deserialize_with = "ReadFileArgs::__de_path")]
        #[schemars(with = "__ReadFileArgs_path")]
        pub path: String,
    }
    #[doc(hidden)]
    #[allow(non_camel_case_types)]
    struct __ReadFileArgs_path;
    impl ::agent_core::__private::schemars::JsonSchema for __ReadFileArgs_path {
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
    ///The `read_file` tool: Read a UTF-8 text file.
    #[derive(::core::clone::Clone)]
    pub(super) struct ReadFile(pub ::std::sync::Arc<FileAgent>);
    ///Arguments of the `write_file` tool.
    #[derive(
        ::agent_core::__private::serde::Deserialize,
        ::agent_core::__private::schemars::JsonSchema
    )]
    #[serde(crate = "::agent_core::__private::serde", deny_unknown_fields)]
    #[schemars(crate = "::agent_core::__private::schemars")]
    pub(super) struct WriteFileArgs {
        #[serde(deserialize_with = "WriteFileArgs::__de_path")]
        #[schemars(with = "__WriteFileArgs_path")]
        pub path: String,
        #[serde(deserialize_with = "WriteFileArgs::__de_contents")]
        #[schemars(with = "__WriteFileArgs_contents")]
        pub contents: String,
    }
    #[doc(hidden)]
    #[allow(non_camel_case_types)]
    struct __WriteFileArgs_path;
    impl ::agent_core::__private::schemars::JsonSchema for __WriteFileArgs_path {
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
    struct __WriteFileArgs_contents;
    impl ::agent_core::__private::schemars::JsonSchema for __WriteFileArgs_contents {
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
    ///The `write_file` tool: Replace a file's contents.
    #[derive(::core::clone::Clone)]
    pub(super) struct WriteFile(pub ::std::sync::Arc<FileAgent>);
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
impl file_agent_tools::ReadFileArgs {
    #[doc(hidden)]
    fn __de_path<'de, D: ::agent_core::__private::serde::Deserializer<'de>>(
        deserializer: D,
    ) -> ::core::result::Result<String, D::Error> {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        (&::agent_core::__private::ParamProbe::<String>::new())
            .deserialize_param(deserializer)
    }
}
impl ::core::clone::Clone for file_agent_tools::ReadFileArgs {
    fn clone(&self) -> Self {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        Self {
            path: (&::agent_core::__private::ParamProbe::<String>::new())
                .clone_param(&self.path),
        }
    }
}
impl ::core::fmt::Debug for file_agent_tools::ReadFileArgs {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        f.debug_struct("ReadFileArgs")
            .field(
                "path",
                (&::agent_core::__private::ParamProbe::<String>::new())
                    .debug_param(&self.path),
            )
            .finish()
    }
}
impl ::agent_core::__private::serde::Serialize for file_agent_tools::ReadFileArgs {
    fn serialize<S: ::agent_core::__private::serde::Serializer>(
        &self,
        serializer: S,
    ) -> ::core::result::Result<S::Ok, S::Error> {
        use ::agent_core::__private::serde::ser::SerializeStruct as _;
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        let mut __state = serializer.serialize_struct("ReadFileArgs", 1usize)?;
        __state
            .serialize_field(
                "path",
                (&::agent_core::__private::ParamProbe::<String>::new())
                    .serialize_param(&self.path),
            )?;
        __state.end()
    }
}
impl ::agent_core::Tool for file_agent_tools::ReadFile {
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read a UTF-8 text file.";
    type Args = file_agent_tools::ReadFileArgs;
    type Output = String;
    fn schema() -> &'static ::agent_core::__private::serde_json::Value {
        static SCHEMA: ::agent_core::__private::OnceLock<
            ::agent_core::__private::serde_json::Value,
        > = ::agent_core::__private::OnceLock::new();
        SCHEMA.get_or_init(::agent_core::schema_for::<file_agent_tools::ReadFileArgs>)
    }
    #[allow(unused_variables)]
    fn call(
        &self,
        __args: file_agent_tools::ReadFileArgs,
        __ctx: ::agent_core::ToolContext,
    ) -> impl ::core::future::Future<
        Output = ::core::result::Result<String, ::agent_core::ToolError>,
    > + ::core::marker::Send {
        async move {
            let __output = self.0.read_file(__args.path).await;
            match __output {
                ::core::result::Result::Ok(__value) => {
                    ::core::result::Result::Ok(__value)
                }
                ::core::result::Result::Err(__error) => {
                    ::core::result::Result::Err(
                        ::agent_core::__private::tool_error::<ToolError>(__error),
                    )
                }
            }
        }
    }
}
impl ::agent_core::ToolInput for file_agent_tools::ReadFileArgs
where
    for<'__a> <file_agent_tools::ReadFile as ::agent_core::Tool>::Output: ::agent_core::__private::serde::Serialize,
{
    type Output = <file_agent_tools::ReadFile as ::agent_core::Tool>::Output;
    fn accepts(tool: &str) -> bool {
        tool == "read_file"
    }
    fn from_args(
        tool: &str,
        args: &::agent_core::AnyValue,
    ) -> ::core::option::Option<Self> {
        ::agent_core::__private::args_from(tool, "read_file", args)
    }
    fn into_args(
        self,
        tool: &dyn ::agent_core::DynTool,
    ) -> ::core::result::Result<::agent_core::AnyValue, ::std::string::String> {
        ::agent_core::__private::args_into(self, "read_file", tool)
    }
}
impl ::agent_core::__private::AcceptsTool<file_agent_tools::ReadFile>
for file_agent_tools::ReadFileArgs {}
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
            String,
            _,
        >((&::agent_core::__private::ParamProbe::<String>::new()).verdict());
    }
};
impl file_agent_tools::WriteFileArgs {
    #[doc(hidden)]
    fn __de_path<'de, D: ::agent_core::__private::serde::Deserializer<'de>>(
        deserializer: D,
    ) -> ::core::result::Result<String, D::Error> {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        (&::agent_core::__private::ParamProbe::<String>::new())
            .deserialize_param(deserializer)
    }
    #[doc(hidden)]
    fn __de_contents<'de, D: ::agent_core::__private::serde::Deserializer<'de>>(
        deserializer: D,
    ) -> ::core::result::Result<String, D::Error> {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        (&::agent_core::__private::ParamProbe::<String>::new())
            .deserialize_param(deserializer)
    }
}
impl ::core::clone::Clone for file_agent_tools::WriteFileArgs {
    fn clone(&self) -> Self {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        Self {
            path: (&::agent_core::__private::ParamProbe::<String>::new())
                .clone_param(&self.path),
            contents: (&::agent_core::__private::ParamProbe::<String>::new())
                .clone_param(&self.contents),
        }
    }
}
impl ::core::fmt::Debug for file_agent_tools::WriteFileArgs {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        f.debug_struct("WriteFileArgs")
            .field(
                "path",
                (&::agent_core::__private::ParamProbe::<String>::new())
                    .debug_param(&self.path),
            )
            .field(
                "contents",
                (&::agent_core::__private::ParamProbe::<String>::new())
                    .debug_param(&self.contents),
            )
            .finish()
    }
}
impl ::agent_core::__private::serde::Serialize for file_agent_tools::WriteFileArgs {
    fn serialize<S: ::agent_core::__private::serde::Serializer>(
        &self,
        serializer: S,
    ) -> ::core::result::Result<S::Ok, S::Error> {
        use ::agent_core::__private::serde::ser::SerializeStruct as _;
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        let mut __state = serializer.serialize_struct("WriteFileArgs", 2usize)?;
        __state
            .serialize_field(
                "path",
                (&::agent_core::__private::ParamProbe::<String>::new())
                    .serialize_param(&self.path),
            )?;
        __state
            .serialize_field(
                "contents",
                (&::agent_core::__private::ParamProbe::<String>::new())
                    .serialize_param(&self.contents),
            )?;
        __state.end()
    }
}
impl ::agent_core::Tool for file_agent_tools::WriteFile {
    const NAME: &'static str = "write_file";
    const DESCRIPTION: &'static str = "Replace a file's contents.";
    type Args = file_agent_tools::WriteFileArgs;
    type Output = usize;
    fn schema() -> &'static ::agent_core::__private::serde_json::Value {
        static SCHEMA: ::agent_core::__private::OnceLock<
            ::agent_core::__private::serde_json::Value,
        > = ::agent_core::__private::OnceLock::new();
        SCHEMA.get_or_init(::agent_core::schema_for::<file_agent_tools::WriteFileArgs>)
    }
    const RUNS_NOW: bool = true;
    fn call(
        &self,
        __args: file_agent_tools::WriteFileArgs,
        __ctx: ::agent_core::ToolContext,
    ) -> impl ::core::future::Future<
        Output = ::core::result::Result<usize, ::agent_core::ToolError>,
    > + ::core::marker::Send {
        async move { <Self as ::agent_core::Tool>::call_now(self, __args, __ctx) }
    }
    #[allow(unused_variables)]
    fn call_now(
        &self,
        __args: file_agent_tools::WriteFileArgs,
        __ctx: ::agent_core::ToolContext,
    ) -> ::core::result::Result<usize, ::agent_core::ToolError> {
        let __output = self.0.write_file(__args.path, __args.contents);
        ::core::result::Result::Ok(__output)
    }
}
impl ::agent_core::ToolInput for file_agent_tools::WriteFileArgs
where
    for<'__a> <file_agent_tools::WriteFile as ::agent_core::Tool>::Output: ::agent_core::__private::serde::Serialize,
{
    type Output = <file_agent_tools::WriteFile as ::agent_core::Tool>::Output;
    fn accepts(tool: &str) -> bool {
        tool == "write_file"
    }
    fn from_args(
        tool: &str,
        args: &::agent_core::AnyValue,
    ) -> ::core::option::Option<Self> {
        ::agent_core::__private::args_from(tool, "write_file", args)
    }
    fn into_args(
        self,
        tool: &dyn ::agent_core::DynTool,
    ) -> ::core::result::Result<::agent_core::AnyValue, ::std::string::String> {
        ::agent_core::__private::args_into(self, "write_file", tool)
    }
}
impl ::agent_core::__private::AcceptsTool<file_agent_tools::WriteFile>
for file_agent_tools::WriteFileArgs {}
///The input of a hook matching the tools `read_file`, `write_file`: one variant per tool, holding its arguments.
#[derive(::core::clone::Clone)]
#[allow(clippy::enum_variant_names, private_interfaces)]
enum FileCall {
    ///Arguments of the `read_file` tool.
    ReadFile(file_agent_tools::ReadFileArgs),
    ///Arguments of the `write_file` tool.
    WriteFile(file_agent_tools::WriteFileArgs),
}
impl ::agent_core::ToolInput for FileCall {
    type Output = ::agent_core::__private::serde_json::Value;
    fn accepts(tool: &str) -> bool {
        ::core::matches!(tool, "read_file" | "write_file")
    }
    fn from_args(
        tool: &str,
        args: &::agent_core::AnyValue,
    ) -> ::core::option::Option<Self> {
        match tool {
            "read_file" => {
                ::agent_core::__private::args_from(tool, "read_file", args)
                    .map(Self::ReadFile)
            }
            "write_file" => {
                ::agent_core::__private::args_from(tool, "write_file", args)
                    .map(Self::WriteFile)
            }
            _ => ::core::option::Option::None,
        }
    }
    fn into_args(
        self,
        tool: &dyn ::agent_core::DynTool,
    ) -> ::core::result::Result<::agent_core::AnyValue, ::std::string::String> {
        match self {
            Self::ReadFile(args) => {
                ::agent_core::__private::args_into(args, "read_file", tool)
            }
            Self::WriteFile(args) => {
                ::agent_core::__private::args_into(args, "write_file", tool)
            }
        }
    }
}
impl ::agent_core::__private::AcceptsTool<file_agent_tools::ReadFile> for FileCall {}
impl ::agent_core::__private::AcceptsTool<file_agent_tools::WriteFile> for FileCall {}
///The input of a hook matching the tools `read_file`, `write_file`, `current_time`: one variant per tool, holding its arguments.
#[derive(::core::clone::Clone)]
#[allow(clippy::enum_variant_names, private_interfaces)]
enum FileAgentInput {
    ///Arguments of the `read_file` tool.
    ReadFile(file_agent_tools::ReadFileArgs),
    ///Arguments of the `write_file` tool.
    WriteFile(file_agent_tools::WriteFileArgs),
    ///Arguments of the `current_time` tool.
    CurrentTime(current_time_tool::CurrentTimeArgs),
}
impl ::agent_core::ToolInput for FileAgentInput {
    type Output = ::agent_core::__private::serde_json::Value;
    fn accepts(tool: &str) -> bool {
        ::core::matches!(tool, "read_file" | "write_file" | "current_time")
    }
    fn from_args(
        tool: &str,
        args: &::agent_core::AnyValue,
    ) -> ::core::option::Option<Self> {
        match tool {
            "read_file" => {
                ::agent_core::__private::args_from(tool, "read_file", args)
                    .map(Self::ReadFile)
            }
            "write_file" => {
                ::agent_core::__private::args_from(tool, "write_file", args)
                    .map(Self::WriteFile)
            }
            "current_time" => {
                ::agent_core::__private::args_from(tool, "current_time", args)
                    .map(Self::CurrentTime)
            }
            _ => ::core::option::Option::None,
        }
    }
    fn into_args(
        self,
        tool: &dyn ::agent_core::DynTool,
    ) -> ::core::result::Result<::agent_core::AnyValue, ::std::string::String> {
        match self {
            Self::ReadFile(args) => {
                ::agent_core::__private::args_into(args, "read_file", tool)
            }
            Self::WriteFile(args) => {
                ::agent_core::__private::args_into(args, "write_file", tool)
            }
            Self::CurrentTime(args) => {
                ::agent_core::__private::args_into(args, "current_time", tool)
            }
        }
    }
}
impl ::agent_core::__private::AcceptsTool<file_agent_tools::ReadFile>
for FileAgentInput {}
impl ::agent_core::__private::AcceptsTool<file_agent_tools::WriteFile>
for FileAgentInput {}
impl ::agent_core::__private::AcceptsTool<current_time_tool::CurrentTime>
for FileAgentInput {}
const _: () = {
    #[allow(dead_code)]
    fn __accepts<I: ::agent_core::__private::AcceptsTool<T>, T: ::agent_core::Tool>() {}
    #[allow(dead_code)]
    fn __output<T: ::agent_core::__private::OutputIs<O>, O>() {}
    #[allow(dead_code)]
    fn __checks() {
        __accepts::<file_agent_tools::WriteFileArgs, file_agent_tools::WriteFile>();
        __output::<file_agent_tools::WriteFile, usize>();
        const _: () = ::core::assert!(
            ::agent_core::__private::str_eq(< current_time_tool::CurrentTime as
            ::agent_core::Tool > ::NAME, "current_time"),
            "the tool listed as `current_time` in `#[agent(tools(...))]` must be named `current_time` (its function's name), because the agent matches hooks against that name"
        );
    }
};
impl ::agent_core::AgentSpec for FileAgent {
    const NAME: &'static str = "FileAgent";
    fn register(
        this: ::std::sync::Arc<Self>,
        builder: ::agent_core::AgentBuilder,
    ) -> ::agent_core::AgentBuilder {
        let builder = builder.instructions("Be careful.").max_steps(8);
        let builder = builder
            .tool(
                file_agent_tools::ReadFile(
                    <::std::sync::Arc<_> as ::core::clone::Clone>::clone(&this),
                ),
            );
        let builder = builder
            .tool(
                file_agent_tools::WriteFile(
                    <::std::sync::Arc<_> as ::core::clone::Clone>::clone(&this),
                ),
            );
        let builder = builder.tool(current_time_tool::CurrentTime);
        let builder = builder
            .before_tool_call(
                ::agent_core::Matcher::tools(["read_file", "write_file"]),
                ::agent_core::Hook::<
                    ::agent_core::event::BeforeToolCall<_>,
                >::from_async(
                    "sandbox",
                    {
                        let __this = <::std::sync::Arc<
                            _,
                        > as ::core::clone::Clone>::clone(&this);
                        move |
                            __ctx: &<::agent_core::event::BeforeToolCall<
                                _,
                            > as ::agent_core::Event>::Ctx|
                        {
                            let __this = <::std::sync::Arc<
                                _,
                            > as ::core::clone::Clone>::clone(&__this);
                            ::std::boxed::Box::pin(async move {
                                <FileAgent>::sandbox(
                                        &__this,
                                        <::agent_core::event::BeforeToolCall<
                                            _,
                                        > as ::agent_core::__private::ContextIs<
                                            ToolCallContext<_>,
                                        >>::cast(__ctx),
                                    )
                                    .await
                            })
                        }
                    },
                ),
            );
        let builder = builder
            .after_tool_call(
                ::agent_core::Matcher::tools(["write_file"]),
                ::agent_core::Hook::<
                    ::agent_core::event::AfterToolCall<_, _>,
                >::sync(
                    "audit",
                    {
                        let __this = <::std::sync::Arc<
                            _,
                        > as ::core::clone::Clone>::clone(&this);
                        move |
                            __ctx: &<::agent_core::event::AfterToolCall<
                                _,
                                _,
                            > as ::agent_core::Event>::Ctx|
                        <FileAgent>::audit(
                            &__this,
                            <::agent_core::event::AfterToolCall<
                                _,
                                _,
                            > as ::agent_core::__private::ContextIs<
                                ToolCallResultContext<_, _>,
                            >>::cast(__ctx),
                        )
                    },
                ),
            );
        let builder = builder
            .hook(
                ::agent_core::Hook::<
                    ::agent_core::event::OnChunk,
                >::sync(
                    "meter",
                    {
                        let __this = <::std::sync::Arc<
                            _,
                        > as ::core::clone::Clone>::clone(&this);
                        move |
                            __ctx: &<::agent_core::event::OnChunk as ::agent_core::Event>::Ctx|
                        <FileAgent>::meter(
                            &__this,
                            <::agent_core::event::OnChunk as ::agent_core::__private::ContextIs<
                                ChunkContext,
                            >>::cast(__ctx),
                        )
                    },
                ),
            );
        let builder = builder.hooks(AuditAll);
        let _ = this;
        builder
    }
}
