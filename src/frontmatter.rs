//! Splits Markdown front matter (placeholder interface; implementation pending).

/// A Markdown document split into its YAML front matter and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    /// The YAML between the fences, if the document starts with a `---` fence.
    pub yaml: Option<&'a str>,
    /// 1-based line of the first YAML line in the original file.
    pub yaml_line: u32,
    /// The Markdown body after the closing fence (the whole text when there is no front matter).
    pub body: &'a str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitError {
    pub message: String,
    pub line: u32,
}

pub fn split(src: &str) -> Result<Split<'_>, SplitError> {
    let _ = src;
    todo!()
}
