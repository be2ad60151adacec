/* The az:// backend of the store interface (storage/store/store_azure.c): Azure Blob
 * Storage on the request core of storage/store/remote.h. */
#ifndef RR_STORE_AZURE_H
#define RR_STORE_AZURE_H

#include "rr/store.h"

/* Opens url, "az://CONTAINER[/PREFIX]" (the account from AZURE_STORAGE_ACCOUNT or the
 * connection string) or "https://ACCOUNT.blob.core.windows.net/CONTAINER[/PREFIX]". The
 * endpoint is AZURE_STORAGE_CONNECTION_STRING's BlobEndpoint (Azurite, sovereign clouds,
 * private endpoints; a path in it, as Azurite's "/devstoreaccount1", is kept), else built
 * from its DefaultEndpointsProtocol and EndpointSuffix, else the public one. Credentials:
 * rr/azure_auth.h. REQUESTS_CA_BUNDLE (as for the Azure CLI) names extra CA certificates;
 * RESUME_RUN_S3_PART_SIZE sets the block size. Probes the container with a one-blob
 * listing; on failure rr_store_strerror says why. */
int rr_store_azure_new(const char *url, const struct rr_store_opts *opts,
		       struct rr_store **out);

#endif
