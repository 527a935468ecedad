//! Where a scrape's text goes as it is written: kept whole (a plain scrape), or compressed
//! as it comes (a gzipped one), so a gzipped scrape's text is never whole in memory.

/// How much text a scrape holds before handing it on: small enough that its buffer is
/// reused from scrape to scrape rather than made anew (a whole scrape's pages were faulted
/// in at every scrape; docs/PERFORMANCE.md), large enough that the compressor is called
/// rarely.
pub(crate) const CHUNK: usize = 64 * 1024;

/// Takes a scrape's text as it is written.
pub(crate) trait Sink {
    /// Takes the text written so far (emptying it when it is kept elsewhere).
    fn take(&mut self, text: &mut String);
}

/// Leaves the text where it is written: a plain scrape's body is the text whole.
pub(crate) struct Whole;

impl Sink for Whole {
    fn take(&mut self, _: &mut String) {}
}

/// A gzipped scrape: the text compressed a [`CHUNK`] at a time as it is written, by
/// `flate2` at the level asked. Plain on purpose: keeping the compressed runs of unchanged
/// families between scrapes saved little CPU for much code (docs/PERFORMANCE.md).
pub(crate) struct Gzip {
    encoder: flate2::write::GzEncoder<Vec<u8>>,
    failed: Option<std::io::Error>,
}

impl Gzip {
    /// A body at `level`, with room for `hint` bytes (the last body's length).
    pub(crate) fn new(level: u32, hint: usize) -> Gzip {
        let body = Vec::with_capacity(hint + hint / 4 + 1024);
        Gzip {
            encoder: flate2::write::GzEncoder::new(body, flate2::Compression::new(level)),
            failed: None,
        }
    }

    /// The body, or the first error the compressor met.
    pub(crate) fn finish(self) -> std::io::Result<Vec<u8>> {
        match self.failed {
            Some(e) => Err(e),
            None => self.encoder.finish(),
        }
    }
}

impl Sink for Gzip {
    fn take(&mut self, text: &mut String) {
        use std::io::Write;
        if self.failed.is_none()
            && let Err(e) = self.encoder.write_all(text.as_bytes())
        {
            self.failed = Some(e);
        }
        text.clear();
    }
}
