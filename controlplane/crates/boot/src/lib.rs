//! Bootlane's boot vocabulary: the machines it knows (hosts, groups, the baseline they report), who may boot (access control: modes, lists, unknown devices) and what they boot (profiles, menus, generated iPXE, GRUB and PXELINUX files, boot binaries). The protocol services and the API build on these types.

pub mod access;
pub mod boot;
pub mod inventory;
