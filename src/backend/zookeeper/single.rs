//! Single-holder layouts, the presets `kafka-zk` and `hadoop-ha`: one ephemeral znode is the
//! leader and nobody waits in line (the others race to create it when it goes). Pure: the
//! nodes as read in, the elections out.
//!
//! - Kafka's ZooKeeper-mode controller (`ControllerZNode` in Kafka's `ZkData.scala`):
//!   ephemeral `/controller` holding `{"version":2,"brokerid":1,"timestamp":"<ms>",
//!   "kraftControllerEpoch":-1}` (version 1 before Kafka 3.4, without the last field), and
//!   the persistent `/controller_epoch` holding the epoch as decimal text; Kafka creates the
//!   first and bumps the second in one `multi`.
//! - Hadoop's `ActiveStandbyElector`: ephemeral `<parent>/<nameservice>/ActiveStandbyElectorLock`
//!   and persistent `ActiveBreadCrumb` beside it, both holding the protobuf `ActiveNodeInfo`
//!   of `HAZKInfo.proto` (HDFS: nameserviceId 1, namenodeId 2, hostname 3, port 4, zkfcPort 5;
//!   YARN's `ActiveRMInfoProto`: clusterId 1, rmId 2). The breadcrumb outlives an active
//!   that died: the next one fences it first.

use std::collections::BTreeMap;

use super::layout::{self, Znode};
use crate::model::{Election, Note, Scheme, SourceId, escape_bytes, truncate_display};
use crate::presets::Preset;

/// How the znodes under a ZooKeeper source's prefix make elections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Recipes' lines (Curator, kazoo, any ephemeral sequential children).
    #[default]
    Recipes,
    /// Kafka's `/controller` below the prefix (the cluster's root).
    Kafka,
    /// Hadoop's `<nameservice>/ActiveStandbyElectorLock` below the prefix.
    Hadoop,
}

const CONTROLLER: &str = "controller";
const CONTROLLER_EPOCH: &str = "controller_epoch";
const LOCK: &str = "ActiveStandbyElectorLock";
const BREADCRUMB: &str = "ActiveBreadCrumb";
/// An id longer than this (a huge node value) is cut for the model; the raw bytes stay whole.
pub(crate) const ID_MAX: usize = 256;

impl Layout {
    pub(crate) fn of(preset: Option<Preset>) -> Layout {
        match preset {
            Some(Preset::KafkaZk) => Layout::Kafka,
            Some(Preset::HadoopHa) => Layout::Hadoop,
            _ => Layout::Recipes,
        }
    }

    pub(crate) fn scheme(self) -> Scheme {
        match self {
            Layout::Recipes => Scheme::ZkRecipe,
            Layout::Kafka => Scheme::KafkaZk,
            Layout::Hadoop => Scheme::HadoopHa,
        }
    }

    /// Where the persistent recursive watch goes: the prefix, but for Kafka only its
    /// `/controller` (below a Kafka root every partition's state changes all the time).
    pub(crate) fn watch_path(self, prefix: &str) -> String {
        match self {
            Layout::Kafka => super::read::join(prefix, CONTROLLER),
            _ => prefix.to_string(),
        }
    }

    /// Whether the whole tree below the prefix is read, or only its children (Kafka: a
    /// cluster's root holds every topic and partition, and the controller is at the top).
    pub(crate) fn deep(self) -> bool {
        self != Layout::Kafka
    }

    /// Whether `n` makes its parent an election.
    pub(crate) fn holds(self, n: &Znode) -> bool {
        match self {
            Layout::Recipes => layout::recipe(n).is_some(),
            Layout::Kafka => matches!(n.name(), CONTROLLER | CONTROLLER_EPOCH),
            Layout::Hadoop => matches!(n.name(), LOCK | BREADCRUMB),
        }
    }

    /// Whether the node at `path` may be one [`Self::holds`] counts, from its name alone: a
    /// watch event about any other needs no read.
    pub(crate) fn may_hold(self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        match self {
            Layout::Recipes => layout::sequence(name).is_some(),
            Layout::Kafka => matches!(name, CONTROLLER | CONTROLLER_EPOCH),
            Layout::Hadoop => matches!(name, LOCK | BREADCRUMB),
        }
    }

    /// What to read when a watch event says the node at `path` was created or written: the
    /// node, and for Kafka's controller the epoch beside it (Kafka writes both in one
    /// `multi`, and only `/controller` is watched).
    pub(crate) fn read_on_event(self, path: &str) -> Vec<String> {
        let mut paths = vec![path.to_string()];
        if self == Layout::Kafka
            && let Some((parent, CONTROLLER)) = path.rsplit_once('/')
        {
            let parent = if parent.is_empty() { "/" } else { parent };
            paths.push(super::read::join(parent, CONTROLLER_EPOCH));
        }
        paths
    }

    /// The name of the election whose znode is `parent`.
    pub(crate) fn name(self, prefix: &str, parent: &str) -> String {
        match self {
            Layout::Kafka => CONTROLLER.to_string(),
            _ => layout::election_name(prefix, parent),
        }
    }

    /// The znode of election `name`, where the layout fixes it.
    pub(crate) fn parent_of(self, prefix: &str, name: &str) -> Option<String> {
        match self {
            Layout::Recipes => None,
            Layout::Kafka => Some(prefix.to_string()),
            Layout::Hadoop if name.starts_with('/') => Some(name.to_string()),
            Layout::Hadoop => Some(super::read::join(prefix, name)),
        }
    }

    /// The election whose znode is `parent`, from its children as read.
    pub(crate) fn election(
        self,
        source: SourceId,
        prefix: &str,
        parent: &str,
        children: &[Znode],
    ) -> Option<Election> {
        let mine: Vec<&Znode> = children
            .iter()
            .filter(|n| n.parent() == parent && self.holds(n))
            .collect();
        match self {
            Layout::Recipes => layout::election(source, prefix, parent, children),
            Layout::Kafka if parent == prefix => kafka(source, &mine),
            Layout::Kafka => None,
            Layout::Hadoop => hadoop(source, layout::election_name(prefix, parent), &mine),
        }
    }

    /// Every election under the prefix, by name.
    pub(crate) fn elections(
        self,
        source: SourceId,
        prefix: &str,
        nodes: &[Znode],
    ) -> Vec<Election> {
        if self == Layout::Recipes {
            return layout::elections(source, prefix, nodes);
        }
        let mut by_parent: BTreeMap<&str, Vec<Znode>> = BTreeMap::new();
        for n in nodes.iter().filter(|n| self.holds(n)) {
            by_parent.entry(n.parent()).or_default().push(n.clone());
        }
        let mut out: Vec<Election> = by_parent
            .into_iter()
            .filter_map(|(parent, children)| self.election(source, prefix, parent, &children))
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

/// A node's value for the screen: escaped, and cut when huge.
pub(crate) fn shown(data: &[u8]) -> String {
    truncate_display(&escape_bytes(data), ID_MAX)
}

fn note(name: &str, text: String, n: &Znode) -> Note {
    Note {
        name: name.to_string(),
        text,
        raw_key: n.path.as_bytes().to_vec(),
        mod_revision: n.mzxid,
    }
}

fn kafka(source: SourceId, nodes: &[&Znode]) -> Option<Election> {
    if nodes.is_empty() {
        return None;
    }
    let mut e = Election::new(source, CONTROLLER.to_string(), Scheme::KafkaZk);
    if let Some(n) = nodes.iter().find(|n| n.name() == CONTROLLER) {
        let mut c = layout::candidate(n);
        match Controller::decode(&n.data) {
            Some(ctl) => {
                c.id = ctl.broker_id.to_string();
                if let Some(epoch) = ctl.kraft_epoch.filter(|e| *e >= 0) {
                    let text = format!(
                        "held by KRaft controller {} (migration from ZooKeeper, KRaft epoch {epoch})",
                        ctl.broker_id
                    );
                    e.notes.push(note("kraft", text, n));
                }
            }
            None => c.id = shown(&n.data),
        }
        e.candidates = vec![c.clone()];
        e.leader = Some(c);
    }
    if let Some(n) = nodes.iter().find(|n| n.name() == CONTROLLER_EPOCH) {
        let text = match std::str::from_utf8(&n.data).ok().map(str::trim) {
            Some(t) if t.parse::<i64>().is_ok() => format!("controller epoch {t}"),
            _ => format!("controller epoch unreadable: {}", shown(&n.data)),
        };
        e.notes.insert(0, note(CONTROLLER_EPOCH, text, n));
    }
    Some(e)
}

fn hadoop(source: SourceId, name: String, nodes: &[&Znode]) -> Option<Election> {
    if nodes.is_empty() {
        return None;
    }
    let mut e = Election::new(source, name, Scheme::HadoopHa);
    let lock = nodes.iter().find(|n| n.name() == LOCK);
    let crumb = nodes.iter().find(|n| n.name() == BREADCRUMB);
    let who = |n: &Znode| match ActiveNode::decode(&n.data) {
        Some(a) => a.to_string(),
        None => shown(&n.data),
    };
    if let Some(n) = lock {
        let mut c = layout::candidate(n);
        c.id = who(n);
        e.candidates = vec![c.clone()];
        e.leader = Some(c);
    }
    if let Some(n) = crumb {
        let last = who(n);
        let text = match &e.leader {
            None => format!(
                "ActiveBreadCrumb: {last} was active last and did not hand over cleanly; \
                 the next active fences it first"
            ),
            Some(l) if l.id != last => {
                format!(
                    "ActiveBreadCrumb still names {last}: fenced as {} takes over",
                    l.id
                )
            }
            // The breadcrumb names the active itself: nothing to tell.
            Some(_) => String::new(),
        };
        e.notes.push(note(BREADCRUMB, text, n));
    }
    Some(e)
}

/// What Kafka writes in `/controller`.
#[derive(Debug, PartialEq, Eq)]
struct Controller {
    broker_id: i64,
    /// Kafka 3.4+: -1, or the KRaft controller's epoch while a migration is under way.
    kraft_epoch: Option<i64>,
}

impl Controller {
    fn decode(data: &[u8]) -> Option<Controller> {
        let v: serde_json::Value = serde_json::from_slice(data).ok()?;
        Some(Controller {
            broker_id: v.get("brokerid")?.as_i64()?,
            kraft_epoch: v.get("kraftControllerEpoch").and_then(|e| e.as_i64()),
        })
    }
}

/// Hadoop's `ActiveNodeInfo` (or YARN's `ActiveRMInfoProto`, whose first two fields are the
/// same kind: the cluster and the node's id).
#[derive(Debug, Default, PartialEq, Eq)]
struct ActiveNode {
    nameservice: String,
    node: String,
    host: Option<String>,
    port: Option<u64>,
}

impl ActiveNode {
    fn decode(data: &[u8]) -> Option<ActiveNode> {
        let mut a = ActiveNode::default();
        for (field, value) in proto_fields(data)? {
            let text = || match &value {
                Wire::Bytes(b) => String::from_utf8(b.to_vec()).ok(),
                Wire::Varint(_) => None,
            };
            match (field, &value) {
                (1, _) => a.nameservice = text()?,
                (2, _) => a.node = text()?,
                (3, _) => a.host = Some(text()?),
                (4, Wire::Varint(p)) => a.port = Some(*p),
                _ => {}
            }
        }
        (!a.node.is_empty()).then_some(a)
    }
}

impl std::fmt::Display for ActiveNode {
    /// `nn1 (nn1.example.com:8020)`: the id Hadoop's tools take, and where it serves.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let node = escape_bytes(self.node.as_bytes());
        match (&self.host, self.port) {
            (Some(h), Some(p)) => write!(f, "{node} ({}:{p})", escape_bytes(h.as_bytes())),
            (Some(h), None) => write!(f, "{node} ({})", escape_bytes(h.as_bytes())),
            _ => f.write_str(&node),
        }
    }
}

/// One protobuf field's value: the two wire types `HAZKInfo.proto` uses.
#[derive(Debug, PartialEq, Eq)]
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// The fields of a protobuf message, in order; `None` when it is not one (or uses a wire
/// type other than varint, 64-bit, length-delimited or 32-bit).
fn proto_fields(mut data: &[u8]) -> Option<Vec<(u64, Wire<'_>)>> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let key = varint(&mut data)?;
        let field = key >> 3;
        if field == 0 {
            return None;
        }
        let value = match key & 7 {
            0 => Wire::Varint(varint(&mut data)?),
            1 => Wire::Bytes(take(&mut data, 8)?),
            2 => {
                let len = usize::try_from(varint(&mut data)?).ok()?;
                Wire::Bytes(take(&mut data, len)?)
            }
            5 => Wire::Bytes(take(&mut data, 4)?),
            _ => return None,
        };
        out.push((field, value));
    }
    Some(out)
}

fn take<'a>(data: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if data.len() < n {
        return None;
    }
    let (head, rest) = data.split_at(n);
    *data = rest;
    Some(head)
}

fn varint(data: &mut &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let (&b, rest) = data.split_first()?;
        *data = rest;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests;
