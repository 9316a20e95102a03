//! The provider tests as one test binary: wire format over real sockets, recorded streams,
//! faults, properties, tool schemas and AIMock conformance.

mod aimock;
mod support;

mod anthropic;
mod conformance;
mod conformance_typed_output;
mod corpus;
mod faults;
mod openai;
mod properties;
mod tool_schemas;
mod typed_output;
mod typed_output_modes;
