/* The program fork_exec launches: an empty main (osbench "launch program"). */
int main(void) { return 0; }
