//! The one writer of `/metrics`: Prometheus's text format (0.0.4) or OpenMetrics 1.0, as
//! the scraper asks. Plain text, written straight into the scrape's buffer: the families'
//! heads, label sets and numbers as `prometheus-client` writes them (a test compares the
//! two), without its registry and collectors between the read model and the text.

use super::sink::{CHUNK, Sink};

/// The two text formats a scrape may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Prometheus's classic text format (0.0.4): `promtool check metrics`, curl.
    Text,
    /// OpenMetrics 1.0, which Prometheus asks for.
    OpenMetrics,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Gauge,
    Counter,
}

/// One family in one format: its HELP and TYPE lines, and the name each sample starts with.
#[derive(Clone, Debug, Default)]
pub(crate) struct Head {
    pub(crate) lines: String,
    pub(crate) sample: String,
}

impl Head {
    /// A counter's samples end in `_total`; the classic format names the family so too,
    /// OpenMetrics without it.
    pub(crate) fn new(format: Format, name: &str, help: &str, kind: Kind) -> Head {
        let sample = match kind {
            Kind::Counter => format!("{name}_total"),
            Kind::Gauge => name.to_string(),
        };
        let family = match format {
            Format::Text => sample.as_str(),
            Format::OpenMetrics => name,
        };
        let help = match format {
            Format::Text => help.replace('\\', "\\\\").replace('\n', "\\n"),
            Format::OpenMetrics => help.to_string(),
        };
        let kind = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        let lines = format!("# HELP {family} {help}\n# TYPE {family} {kind}\n");
        Head { lines, sample }
    }
}

/// A label set, `{context="prod",source="etcd1"}`: the context (on every series when one
/// was chosen) first, then `pairs`; empty when there are none.
pub(crate) fn labels(context: Option<&str>, pairs: &[(&str, &str)]) -> String {
    let all = context
        .map(|c| ("context", c))
        .into_iter()
        .chain(pairs.iter().copied());
    let mut s = String::new();
    for (name, value) in all {
        s.push(if s.is_empty() { '{' } else { ',' });
        push_label(&mut s, name, value);
    }
    if !s.is_empty() {
        s.push('}');
    }
    s
}

/// `base` with one more label, last.
pub(crate) fn with_label(base: &str, name: &str, value: &str) -> Box<str> {
    let open = base.strip_suffix('}').unwrap_or(base);
    let mut s = String::with_capacity(base.len() + name.len() + value.len() + 5);
    s.push_str(if open.is_empty() { "{" } else { open });
    if !open.is_empty() {
        s.push(',');
    }
    push_label(&mut s, name, value);
    s.push('}');
    s.into()
}

/// `name="value"`, the value escaped (`\`, `"` and newline) as both formats want.
fn push_label(s: &mut String, name: &str, value: &str) {
    s.push_str(name);
    s.push_str("=\"");
    for c in value.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s.push('"');
}

/// A sample's number: a float as `dtoa` writes it, a count as `itoa` does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Num {
    F(f64),
    U(u64),
}

/// The text being written and where it goes once it holds a [`CHUNK`].
pub(crate) struct Writer<'a> {
    pub(crate) out: &'a mut String,
    pub(crate) sink: &'a mut dyn Sink,
    pub(crate) n: itoa::Buffer,
    pub(crate) f: dtoa::Buffer,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(out: &'a mut String, sink: &'a mut dyn Sink) -> Writer<'a> {
        Writer {
            out,
            sink,
            n: itoa::Buffer::new(),
            f: dtoa::Buffer::new(),
        }
    }

    /// A family's HELP and TYPE lines.
    pub(crate) fn head(&mut self, head: &Head) {
        self.out.push_str(&head.lines);
    }

    /// One sample: the family's sample name, the kept labels and the number.
    pub(crate) fn sample(&mut self, name: &str, labels: &str, v: Num) {
        let out = &mut *self.out;
        out.push_str(name);
        out.push_str(labels);
        out.push(' ');
        match v {
            // A whole number (a flag, a count, a term of whole seconds: most samples) as
            // `dtoa` writes it, `1.0`, for a fraction of its cost.
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
