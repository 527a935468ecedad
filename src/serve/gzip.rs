//! A gzip body (RFC 1952) written a chunk at a time, by one compressor kept from scrape to
//! scrape. `flate2`'s `GzEncoder` zeroes its output buffer before every chunk it compresses
//! and is made anew (its tables allocated) for each body; a scrape at 10,000 elections hands
//! it about 170 chunks. This one compresses into a scratch buffer that is already
//! initialised, and resets the compressor instead of making another.
//!
//! It also keeps each family of series it was handed whole, compressed on its own, with
//! what its text was made from: the next scrape whose family would be made from the same
//! (the same elections, labels and numbers) sends the kept bytes instead of writing and
//! compressing the text again. A family is a run of deflate blocks that refers to nothing
//! before it and ends on a byte boundary, so the runs can be laid side by side in one
//! stream, and the gzip CRC of the whole is put together from theirs.

use flate2::{Compress, Compression, Crc, FlushCompress, Status};

use super::sink::{Fingerprint, Sink};

/// What a gzip body is made with, kept between bodies.
pub(crate) struct Gzip {
    level: u32,
    z: Compress,
    crc: Crc,
    /// Where the compressor writes before its output is appended to the body.
    scratch: Box<[u8]>,
    body: Vec<u8>,
    /// The compressor holds text not yet flushed to a byte boundary.
    open: bool,
    /// Each family's compressed run from the last scrape it was written in, by family.
    kept: Vec<Option<Kept>>,
    /// The family being written to be kept: where its run began in the body, its CRC.
    keeping: Option<(usize, Crc)>,
    /// How long the last body was: the next one is given room for it at once.
    last_len: usize,
    /// Families sent as kept, all told.
    pub(crate) reused: u64,
}

/// A family's compressed run and what its text was made from.
struct Kept {
    from: Fingerprint,
    deflated: Vec<u8>,
    crc: Crc,
}

const SCRATCH: usize = 64 * 1024;

impl Gzip {
    pub(crate) fn new(level: u32) -> Gzip {
        Gzip {
            level,
            // Raw deflate: the gzip header and trailer are written here.
            z: Compress::new(Compression::new(level), false),
            crc: Crc::new(),
            scratch: vec![0; SCRATCH].into_boxed_slice(),
            body: Vec::new(),
            open: false,
            kept: Vec::new(),
            keeping: None,
            last_len: 0,
            reused: 0,
        }
    }

    /// Starts a body at `level`, with room for a little more than the last one.
    pub(crate) fn start(&mut self, level: u32) {
        if level != self.level {
            *self = Gzip::new(level);
        }
        self.z.reset();
        self.crc.reset();
        self.open = false;
        self.keeping = None;
        self.body = Vec::with_capacity(self.last_len + self.last_len / 4 + 1024);
        // Magic, deflate, no flags, no modification time, how hard it was compressed
        // (4: fastest, 2: hardest), operating system unknown.
        let xfl = match level {
            0..=1 => 4,
            9 => 2,
            _ => 0,
        };
        self.body
            .extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, xfl, 0xff]);
    }

    /// Compresses `input` onto the body.
    pub(crate) fn write(&mut self, input: &[u8]) -> std::io::Result<()> {
        self.crc.update(input);
        if let Some((_, crc)) = &mut self.keeping {
            crc.update(input);
        }
        self.open |= !input.is_empty();
        self.run(input, FlushCompress::None)
    }

    /// Ends what was compressed so far on a byte boundary, and starts the compressor
    /// afresh: what comes next refers to nothing before it.
    fn cut(&mut self) -> std::io::Result<()> {
        if self.open {
            self.run(&[], FlushCompress::Sync)?;
            self.z.reset();
            self.open = false;
        }
        Ok(())
    }

    /// Ends the body (the rest of the deflate stream, then its CRC and length) and hands it
    /// over.
    pub(crate) fn finish(&mut self) -> std::io::Result<Vec<u8>> {
        self.run(&[], FlushCompress::Finish)?;
        let mut body = std::mem::take(&mut self.body);
        body.extend_from_slice(&self.crc.sum().to_le_bytes());
        body.extend_from_slice(&self.crc.amount().to_le_bytes());
        self.last_len = body.len();
        Ok(body)
    }

    /// Family `family`'s run kept from the last scrape it was written in.
    fn kept(&self, family: usize) -> Option<&Kept> {
        self.kept.get(family).and_then(Option::as_ref)
    }

    /// Compresses `input` with `flush`, until all of it is taken (and, to finish or flush,
    /// until the compressor has nothing more to give).
    fn run(&mut self, mut input: &[u8], flush: FlushCompress) -> std::io::Result<()> {
        loop {
            let (was_in, was_out) = (self.z.total_in(), self.z.total_out());
            let status = self
                .z
                .compress(input, &mut self.scratch, flush)
                .map_err(std::io::Error::other)?;
            let read = (self.z.total_in() - was_in) as usize;
            let wrote = (self.z.total_out() - was_out) as usize;
            self.body.extend_from_slice(&self.scratch[..wrote]);
            input = &input[read..];
            let done = match flush {
                FlushCompress::Finish => status == Status::StreamEnd,
                FlushCompress::None => input.is_empty(),
                // A flush is done when it left room to spare: the compressor had no more.
                _ => input.is_empty() && wrote < self.scratch.len(),
            };
            if done {
                return Ok(());
            }
            if read == 0 && wrote == 0 {
                return Err(std::io::Error::other("the compressor made no progress"));
            }
        }
    }
}

/// Where a gzipped scrape's text goes: compressed as it comes, each family that can be
/// kept compressed on its own, and sent from what was kept when it would be the same.
pub(crate) struct GzipSink<'a> {
    pub(crate) gzip: &'a mut Gzip,
    pub(crate) failed: Option<std::io::Error>,
}

impl GzipSink<'_> {
    fn attempt(&mut self, r: std::io::Result<()>) {
        if let Err(e) = r {
            self.failed.get_or_insert(e);
        }
    }
}

impl Sink for GzipSink<'_> {
    fn take(&mut self, text: &mut String) {
        let r = self.gzip.write(text.as_bytes());
        self.attempt(r);
        text.clear();
    }

    fn keeps(&self) -> bool {
        true
    }

    fn reuse(&mut self, family: usize, from: &Fingerprint) -> bool {
        let g = &mut *self.gzip;
        if g.kept(family).is_none_or(|k| k.from != *from) {
            return false;
        }
        let r = g.cut();
        // Field by field: the run is read while the body and CRC grow.
        if let Some(Some(kept)) = g.kept.get(family) {
            g.body.extend_from_slice(&kept.deflated);
            g.crc.combine(&kept.crc);
            g.reused += 1;
        }
        self.attempt(r);
        true
    }

    fn begin(&mut self, _family: usize, keep: bool) {
        if keep {
            let r = self.gzip.cut();
            self.attempt(r);
            self.gzip.keeping = Some((self.gzip.body.len(), Crc::new()));
        }
    }

    fn end(&mut self, family: usize, from: Option<Fingerprint>) {
        let g = &mut *self.gzip;
        let (Some(from), Some((start, crc))) = (from, g.keeping.take()) else {
            return;
        };
        let r = g.cut();
        self.attempt(r);
        // A run the compressor failed in is not kept: the body it was for is refused.
        if self.failed.is_some() {
            return;
        }
        let g = &mut *self.gzip;
        if g.kept.len() <= family {
            g.kept.resize_with(family + 1, || None);
        }
        g.kept[family] = Some(Kept {
            from,
            deflated: g.body[start..].to_vec(),
            crc,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn gunzip(z: &[u8]) -> Vec<u8> {
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(z)
            .read_to_end(&mut back)
            .expect("a gzip stream");
        back
    }

    /// Bodies made one after another by one `Gzip`, in pieces of every size (larger than
    /// the scratch buffer too), each decode to what went in; and an empty one.
    #[test]
    fn each_body_decodes_to_what_was_written() {
        let text: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("line {i} {}\n", i % 7).into_bytes())
            .collect();
        let mut g = Gzip::new(1);
        for (level, piece) in [(1, 1000), (1, 65_536), (6, 300_000), (1, text.len())] {
            g.start(level);
            for part in text.chunks(piece) {
                g.write(part).expect("compressed");
            }
            let z = g.finish().expect("finished");
            assert!(z.len() < text.len() / 4, "{} of {}", z.len(), text.len());
            assert_eq!(gunzip(&z), text, "level {level}, pieces of {piece}");
        }
        g.start(1);
        assert_eq!(gunzip(&g.finish().expect("finished")), b"");
    }
}
