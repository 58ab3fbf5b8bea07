//! ctx: a toolchain for OpenContext v1 context repositories.
pub mod canonical;
pub mod frontmatter;
pub mod provider;
pub mod signing;
pub mod yaml;

#[cfg(test)]
pub(crate) mod testutil;
