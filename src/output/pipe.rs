//! Writing to stdout when the reader may go away (`status | head`): a closed pipe ends the
//! output quietly, as the README promises, where `print!` would panic.

use std::io::{self, Write};

/// `text` whole to stdout, flushed; a reader that went away is not an error.
pub(crate) fn print(text: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    quiet(out.write_all(text).and_then(|()| out.flush()))
}

/// A write's result with a closed pipe taken as the end of the output.
pub(crate) fn quiet(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if closed(&e) => Ok(()),
        r => r,
    }
}

/// The reader went away.
pub(crate) fn closed(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}
