//! Baseline for `scripts/bench`: walk a folder (respecting .gitignore, like ctx)
//! and read every file once. Whatever ctx spends beyond this is parsing and checking.

fn main() {
    let root = std::env::args().nth(1).expect("usage: walkread <folder>");
    let mut files = 0usize;
    let mut bytes = 0usize;
    for entry in ignore::WalkBuilder::new(&root)
        .git_global(false)
        .build()
        .flatten()
    {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            if let Ok(b) = std::fs::read(entry.path()) {
                files += 1;
                bytes += b.len();
            }
        }
    }
    println!("{files} files, {bytes} bytes");
}
