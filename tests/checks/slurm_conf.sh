# Sourced by tests/checks/slurm_check.sh and tests/checks/cluster_check.sh: the slurm.conf
# lines both test clusters share.  No munge (auth/none, cred/none), no
# cgroups (proctrack/linuxproc, task/none), no accounting, and nodes that
# come back by themselves after a restart.
slurm_common_conf() {
    cat <<CONF
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SlurmdParameters=config_overrides
SlurmUser=root
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
CONF
}
