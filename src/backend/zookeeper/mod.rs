//! ZooKeeper: the recipes that elect a leader with ephemeral sequential znodes (Curator,
//! kazoo), read and followed through watches.

pub mod layout;
