#!/usr/bin/env -S culprit trace -s
/*
 * The Solaris IBS DTrace provider's second example, for the executable `memtest`:
 * L2 TLB misses of instruction fetches, data-cache misses per core, and the ten virtual
 * addresses (with their physical addresses) that missed the data cache most often.
 */
#pragma D option quiet

ibs:::ibs-fetch-500
/execname == "memtest"/
{
	@l2tlb[execname] = sum(args[0]->IbsFetchCtl.bit.IbsL2TlbMiss);
}

ibs-exec-1000
/execname == "memtest"/
{
	@dcmiss[execname, args[0]->cpu_id] = sum(args[0]->IbsOpData3.bit.IbsDcMiss);
}

ibs-exec-1000
/execname == "memtest" && args[0]->IbsOpData3.bit.IbsDcMiss == 1 &&
 args[0]->IbsOpData3.bit.IbsDcLinAddrValid == 1/
{
	@va[args[0]->IbsDcLinAd, args[0]->IbsDcPhysAd] = count();
}

END
{
	printf("L2 TLB misses (instruction fetch):\n");
	printa(@l2tlb);
	printf("\nDcache misses per core:\n");
	printa("  %-16s cpu %-4d %@d\n", @dcmiss);
	trunc(@va, 10);
	printf("\nTop 10 VA that caused dcache misses:\n");
	printa("  0x%-16x 0x%-16x %@d\n", @va);
}
