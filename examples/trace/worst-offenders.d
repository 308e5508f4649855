#!/usr/bin/env -S culprit trace -s
/*
 * The worst offending instructions of each command, found in bounded memory by the
 * paired-sampling detector (docs/offenders.md): per command, one fixed-size detector that
 * confirms an address when it takes >= T2 of the next T1 samples (here 5 of 100, the
 * defaults of `culprit report --offenders`). Sorted by confirmations, most first.
 */
#pragma D option quiet

pmc:::cpu-clock
{
	@worst[execname] = offenders(ip, 100, 5);
}

END
{
	printf("Worst offenders per command (CONF: rounds that confirmed the address):\n");
	printa(@worst);
}
