//! ctx: a toolchain for OpenContext v1 context repositories.
pub mod canonical;
pub mod frontmatter;
pub mod yaml;
