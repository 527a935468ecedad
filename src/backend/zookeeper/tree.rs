//! The whole tree below a prefix, read as `status` and the first frame need it: many
//! parents at once, and a parent with many children (the prefix of 10,000 elections) read in
//! chunks, descending into each chunk's elections as soon as it answers. Waiting for all of
//! the prefix's 10,000 `getData` first held the first election's candidates back until they
//! had all answered, and the first frame with them (docs/PERFORMANCE.md).

use std::collections::{HashMap, VecDeque};

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use super::error::ZkError;
use super::layout::Znode;
use super::read::{MAX_NODES, Reader, Seen};

/// Parents whose children are being read at once, each a `getChildren` then, when it has
/// at most [`INLINE`] children, a `getData` per child, all pipelined on the one connection.
const PARENTS_IN_FLIGHT: usize = 64;
/// A parent with more children than this has them read in chunks of [`CHUNK`].
const INLINE: usize = 32;
/// The `getData` of one chunk, and chunks in flight at once: enough to keep the connection
/// busy, few enough that a newly found election's reads wait behind at most 256 of them
/// (the server answers a session's requests in order).
const CHUNK: usize = 128;
const CHUNKS_IN_FLIGHT: usize = 2;

enum Job {
    /// A parent's children listed, and read too when they are few.
    Parent(String),
    /// Part of a parent's children, read.
    Chunk(Part<Vec<String>>),
}

/// Part `index` of `parent`'s children.
struct Part<T> {
    parent: String,
    index: usize,
    of: T,
}

enum Done {
    /// A parent's children, all read (with those that have children of their own).
    Whole(String, Vec<Znode>, Vec<String>),
    /// A parent with too many children to read in one go: their paths.
    Split(String, Vec<String>),
    /// One chunk of a split parent's children read.
    Chunk(Part<Vec<Znode>>, Vec<String>),
}

async fn run(reader: &Reader<'_>, job: Job) -> Result<Done, ZkError> {
    match job {
        Job::Parent(parent) => {
            let paths = reader.list(&parent).await?;
            if paths.len() > INLINE {
                return Ok(Done::Split(parent, paths));
            }
            let (nodes, deeper) = reader.data(paths).await?;
            Ok(Done::Whole(parent, nodes, deeper))
        }
        Job::Chunk(Part { parent, index, of }) => {
            let (nodes, deeper) = reader.data(of).await?;
            let of = nodes;
            Ok(Done::Chunk(Part { parent, index, of }, deeper))
        }
    }
}

/// A split parent's chunks read so far: its children are told together, once all are in,
/// so a parent that is itself an election is only ever shown whole.
struct Split {
    parts: Vec<Option<Vec<Znode>>>,
    left: usize,
}

/// What is left to read, and what was read.
#[derive(Default)]
struct Walk {
    /// Newest first: a chunk's elections are read before the next chunk's.
    parents: Vec<String>,
    chunks: VecDeque<Part<Vec<String>>>,
    split: HashMap<String, Split>,
    out: Vec<Znode>,
    /// Znodes read, counting the chunks of a parent not whole yet.
    read: usize,
}

impl Walk {
    fn split(&mut self, parent: String, paths: Vec<String>) {
        let n = paths.len().div_ceil(CHUNK);
        for (index, chunk) in paths.chunks(CHUNK).enumerate() {
            let of = chunk.to_vec();
            let parent = parent.clone();
            self.chunks.push_back(Part { parent, index, of });
        }
        let parts = (0..n).map(|_| None).collect();
        self.split.insert(parent, Split { parts, left: n });
    }

    /// A chunk read: the parent's children in their listed order once it was the last.
    fn chunk(&mut self, part: Part<Vec<Znode>>) -> Option<(String, Vec<Znode>)> {
        let s = self.split.get_mut(&part.parent)?;
        s.parts[part.index] = Some(part.of);
        s.left -= 1;
        if s.left > 0 {
            return None;
        }
        let s = self.split.remove(&part.parent)?;
        Some((
            part.parent,
            s.parts.into_iter().flatten().flatten().collect(),
        ))
    }
}

/// Every znode below `prefix` (not the prefix itself), at most [`MAX_NODES`]; `seen` is told
/// how many znodes each answer brought and each parent's children once all are read.
pub(super) async fn tree(
    reader: &Reader<'_>,
    prefix: &str,
    seen: &mut impl Seen,
) -> Result<Vec<Znode>, ZkError> {
    let mut w = Walk {
        parents: vec![prefix.to_string()],
        ..Walk::default()
    };
    let mut running = FuturesUnordered::new();
    let (mut parents, mut chunks) = (0, 0);
    loop {
        while parents < PARENTS_IN_FLIGHT
            && let Some(p) = w.parents.pop()
        {
            parents += 1;
            running.push(run(reader, Job::Parent(p)));
        }
        // The next chunk only once every parent found is under way: an election's second
        // round trip (its candidates' `getData`) would otherwise queue behind the chunk's.
        // The parents still in flight keep the connection busy meanwhile.
        while chunks < CHUNKS_IN_FLIGHT
            && w.parents.is_empty()
            && let Some(c) = w.chunks.pop_front()
        {
            chunks += 1;
            running.push(run(reader, Job::Chunk(c)));
        }
        let Some(done) = running.next().await else {
            return Ok(w.out);
        };
        let whole = match done? {
            Done::Split(parent, paths) => {
                parents -= 1;
                w.split(parent, paths);
                None
            }
            Done::Whole(parent, nodes, deeper) => {
                parents -= 1;
                w.read += nodes.len();
                seen.znodes(nodes.len());
                w.parents.extend(deeper);
                Some((parent, nodes))
            }
            Done::Chunk(part, deeper) => {
                chunks -= 1;
                w.read += part.of.len();
                seen.znodes(part.of.len());
                w.parents.extend(deeper);
                w.chunk(part)
            }
        };
        if let Some((parent, nodes)) = whole {
            seen.parent(&parent, &nodes).await;
            w.out.extend(nodes);
        }
        if w.read > MAX_NODES {
            return Err(ZkError::TooMany(MAX_NODES, prefix.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: &str) -> Znode {
        Znode {
            path: path.into(),
            data: Vec::new(),
            czxid: 1,
            mzxid: 1,
            ephemeral_owner: 0,
        }
    }

    #[test]
    fn a_split_parent_is_told_once_whole_in_its_listed_order() {
        let mut w = Walk::default();
        let paths: Vec<String> = (0..CHUNK * 2 + 5).map(|i| format!("/e/{i}")).collect();
        w.split("/e".into(), paths.clone());
        let chunks: Vec<_> = w.chunks.drain(..).collect();
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks[2].of.len(), 5);
        let read = |c: &Part<Vec<String>>| Part {
            parent: c.parent.clone(),
            index: c.index,
            of: c.of.iter().map(|p| node(p)).collect(),
        };
        // Answers come in any order; only the last makes the parent whole.
        assert!(w.chunk(read(&chunks[2])).is_none());
        assert!(w.chunk(read(&chunks[0])).is_none());
        let (parent, nodes) = w.chunk(read(&chunks[1])).expect("whole");
        assert_eq!(parent, "/e");
        let got: Vec<String> = nodes.into_iter().map(|n| n.path).collect();
        assert_eq!(got, paths);
        assert!(w.split.is_empty());
    }
}
