// placeholder: implemented by the I/O work
