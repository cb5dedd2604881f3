//! TFTP under packet loss: `scripts/e2e-tftp-loss.sh` drops 5 % of the UDP datagrams at
//! random in each direction between two namespaces (nftables `numgen random`: this kernel
//! has no `sch_netem`) while curl, tftp-hpa and atftp download at once, lock-step (RFC
//! 1350, blksize) and windowed (RFC 7440). Every file must arrive byte-exact, and the
//! datagrams the server sent must stay within what the loss explains (1.35x the blocks
//! lock-step, 2.5x windowed): retransmitting on a duplicate ACK (the Sorcerer's Apprentice
//! syndrome) would double them.

use bootlane_tests::run_e2e;

/// 20 lock-step and 9 windowed downloads through a lossy link, byte-exact, no
/// Sorcerer's Apprentice.
#[test]
fn downloads_survive_five_percent_loss_byte_exact() {
    run_e2e("e2e-tftp-loss.sh", "e2e-tftp-loss");
}
