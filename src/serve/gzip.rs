//! A gzip body (RFC 1952) written a chunk at a time, by one compressor kept from scrape to
//! scrape. `flate2`'s `GzEncoder` zeroes its output buffer before every chunk it compresses
//! and is made anew (its tables allocated) for each body; a scrape at 10,000 elections hands
//! it about 170 chunks. This one compresses into a scratch buffer that is already
//! initialised, and resets the compressor instead of making another.

use flate2::{Compress, Compression, Crc, FlushCompress, Status};

/// What a gzip body is made with, kept between bodies.
pub(crate) struct Gzip {
    level: u32,
    z: Compress,
    crc: Crc,
    /// Where the compressor writes before its output is appended to the body.
    scratch: Box<[u8]>,
    body: Vec<u8>,
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
        }
    }

    /// Starts a body at `level`, with room for `capacity` bytes of it.
    pub(crate) fn start(&mut self, level: u32, capacity: usize) {
        if level != self.level {
            *self = Gzip::new(level);
        }
        self.z.reset();
        self.crc.reset();
        self.body = Vec::with_capacity(capacity.max(64));
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
        self.run(input, FlushCompress::None)
    }

    /// Ends the body (the rest of the deflate stream, then its CRC and length) and hands it
    /// over.
    pub(crate) fn finish(&mut self) -> std::io::Result<Vec<u8>> {
        self.run(&[], FlushCompress::Finish)?;
        let mut body = std::mem::take(&mut self.body);
        body.extend_from_slice(&self.crc.sum().to_le_bytes());
        body.extend_from_slice(&self.crc.amount().to_le_bytes());
        Ok(body)
    }

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
                _ => input.is_empty(),
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
            g.start(level, 16);
            for part in text.chunks(piece) {
                g.write(part).expect("compressed");
            }
            let z = g.finish().expect("finished");
            assert!(z.len() < text.len() / 4, "{} of {}", z.len(), text.len());
            assert_eq!(gunzip(&z), text, "level {level}, pieces of {piece}");
        }
        g.start(1, 0);
        assert_eq!(gunzip(&g.finish().expect("finished")), b"");
    }
}
