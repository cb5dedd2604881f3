//! Several nodes end to end: `scripts/e2e-cluster.sh` runs two Bootlane nodes in two
//! namespaces on one PostgreSQL cluster it creates, both serving one DHCP pool. perfdhcp and
//! udhcpc run against both; every DHCPACK on the wire is captured and no address may go to
//! two MACs, every acknowledged lease must be in the database; records created through node
//! A must be answered by node B's XDP program within 100 ms (p99); node B is killed with
//! `kill -9` under load and the database is stopped for 10 s.

use bootlane_tests::run_e2e;

/// Two nodes, one pool, one database: duplicates, durability, propagation, failures.
#[test]
fn two_nodes_share_one_pool_and_survive_failures() {
    run_e2e("e2e-cluster.sh", "e2e-cluster");
}
