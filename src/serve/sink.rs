//! Where a scrape's text goes as it is written, a family of series at a time: kept whole (a
//! plain scrape), or compressed as it comes (a gzipped one), where a family made from the
//! same as at the last scrape can be sent as it was kept then.

/// How much text a scrape holds before handing it on: small enough that its buffer is
/// reused from scrape to scrape rather than made anew (a whole scrape, 5-8 MB at 10,000
/// elections, had its pages faulted in at every scrape), large enough that the compressor
/// is called rarely.
pub(crate) const CHUNK: usize = 64 * 1024;

/// What a family's text is made from, exactly: the format, which label sets its elections
/// had (a count moved each time any of them was made again, an election came or went), and
/// each sample's election (its place in the model's order) and number. Two families with
/// the same fingerprint have the same text, so one can be sent for the other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    pub(crate) format: super::series::Format,
    pub(crate) labels: (u64, u64),
    pub(crate) samples: Vec<(u32, u64)>,
}

/// Takes a scrape's text, a family at a time.
pub(crate) trait Sink {
    /// Takes the text written so far (emptying it when it is kept elsewhere).
    fn take(&mut self, text: &mut String);

    /// Whether it keeps families for the next scrape: if not, no fingerprint is made.
    fn keeps(&self) -> bool {
        false
    }

    /// Sends family `family` as it was kept, when it was made from `from`: then it need not
    /// be written.
    fn reuse(&mut self, _family: usize, _from: &Fingerprint) -> bool {
        false
    }

    /// Family `family` is about to be written, to be kept (`keep`) or not.
    fn begin(&mut self, _family: usize, _keep: bool) {}

    /// Family `family` is written (and taken), made from `from` when it is to be kept.
    fn end(&mut self, _family: usize, _from: Option<Fingerprint>) {}
}

/// Leaves the text where it is written: a plain scrape's body is the text whole.
pub(crate) struct Whole;

impl Sink for Whole {
    fn take(&mut self, _: &mut String) {}
}

/// A sample's number, as `prometheus-client` writes each kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Num {
    F(f64),
    U(u64),
}

impl Num {
    /// The number exactly, for a fingerprint.
    pub(crate) fn bits(self) -> u64 {
        match self {
            Num::F(x) => x.to_bits(),
            Num::U(x) => x,
        }
    }
}

/// The text being written and where it goes once it holds a [`CHUNK`].
pub(crate) struct Writer<'a> {
    pub(crate) out: &'a mut String,
    pub(crate) sink: &'a mut dyn Sink,
    pub(crate) n: itoa::Buffer,
    pub(crate) f: dtoa::Buffer,
}

impl Writer<'_> {
    /// One sample: the family's sample name, the kept labels and the number.
    pub(crate) fn sample(&mut self, name: &str, labels: &str, v: Num) {
        let out = &mut *self.out;
        out.push_str(name);
        out.push_str(labels);
        out.push(' ');
        match v {
            // A whole number (a flag, a count, a term of whole seconds: most samples) as
            // `dtoa` writes it, `1.0`, for a sixth of its cost.
            Num::F(x)
                if x.fract() == 0.0 && x.abs() < 1e15 && !(x == 0.0 && x.is_sign_negative()) =>
            {
                out.push_str(self.n.format(x as i64));
                out.push_str(".0");
            }
            Num::F(x) => out.push_str(self.f.format(x)),
            Num::U(x) => out.push_str(self.n.format(x)),
        }
        out.push('\n');
        if out.len() >= CHUNK {
            self.sink.take(out);
        }
    }

    /// Hands on what was written so far.
    pub(crate) fn flush(&mut self) {
        self.sink.take(self.out);
    }
}
